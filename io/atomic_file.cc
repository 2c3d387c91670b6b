#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/os_error.h"
#include "core/status_macros.h"
#include "io/crash_point.h"

namespace sluice {
namespace {

std::atomic<uint64_t> temp_counter{0};

// Makes the rename itself durable.
absl::Status SyncDirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return OsError(errno, dir, ": cannot open to sync");
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot sync a directory (EINVAL); the rename has happened either way.
  if (rc != 0 && err != EINVAL) return OsError(err, dir, ": fsync");
  return absl::OkStatus();
}

}  // namespace

const std::string& AtomicFileHostTag() {
  static const std::string* tag = [] {
    std::string boot = "00000000";
    if (std::FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "re")) {
      char id[64] = {0};
      if (std::fgets(id, sizeof(id), f) != nullptr && std::strlen(id) >= 8) boot.assign(id, 8);
      std::fclose(f);
    }
    struct stat ns;
    const unsigned long long inode =
        ::stat("/proc/self/ns/pid", &ns) == 0 ? static_cast<unsigned long long>(ns.st_ino) : 0;
    return new std::string(absl::StrCat(boot, "-", inode));
  }();
  return *tag;
}

AtomicFile::AtomicFile(std::string path, std::string temp_path, int fd, AtomicFileOptions options)
    : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(fd), options_(options) {
  options_.buffer_size = std::max<size_t>(options_.buffer_size, 4096);
  buffer_ = std::make_unique_for_overwrite<char[]>(options_.buffer_size);
}

absl::StatusOr<std::unique_ptr<AtomicFile>> AtomicFile::Create(std::string path,
                                                               AtomicFileOptions options) {
  if (path.empty()) return absl::InvalidArgumentError("AtomicFile: empty path");
  // O_EXCL with a fresh name per try: never clobbers another writer's temporary file. The mode
  // is filtered by the umask like any new file's (mkstemp would force 0600).
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp = absl::StrCat(path, ".tmp.", ::getpid(), ".", temp_counter.fetch_add(1), ".",
                                    AtomicFileHostTag());
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      return std::unique_ptr<AtomicFile>(
          new AtomicFile(std::move(path), std::move(temp), fd, options));
    }
    if (errno != EEXIST && errno != EINTR) {
      return OsError(errno, path, ": cannot create temporary file ", temp);
    }
  }
  return absl::AlreadyExistsError(
      absl::StrCat(path, ": could not find a free temporary name after 100 tries"));
}

AtomicFile::~AtomicFile() { Abandon(); }

void AtomicFile::Abandon() {
  if (fd_ < 0 && !parked_) return;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  parked_ = false;
  ::unlink(temp_path_.c_str());
  if (status_.ok()) status_ = absl::FailedPreconditionError(absl::StrCat(path_, ": abandoned"));
}

absl::Status AtomicFile::Fail(absl::Status status) {
  status_ = status;
  return status;
}

absl::Status AtomicFile::WriteAll(const char* data, size_t n) {
  while (n > 0) {
    const ssize_t wrote = ::write(fd_, data, n);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      return Fail(OsError(errno, temp_path_, ": write failed"));
    }
    data += wrote;
    n -= static_cast<size_t>(wrote);
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Flush() {
  const size_t n = buffered_;
  buffered_ = 0;
  return WriteAll(buffer_.get(), n);
}

absl::Status AtomicFile::Park() {
  if (!status_.ok() || parked_) return status_;
  SLUICE_RETURN_IF_ERROR(Flush());
  const int fd = std::exchange(fd_, -1);
  parked_ = true;
  buffer_.reset();
  // close() can report a deferred write error (NFS): it counts.
  if (::close(fd) != 0) {
    return Fail(OsError(errno, temp_path_, ": close failed"));
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Unpark() {
  int fd;
  do {
    fd = ::open(temp_path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return Fail(OsError(errno, temp_path_, ": cannot reopen"));
  fd_ = fd;
  parked_ = false;
  buffer_ = std::make_unique_for_overwrite<char[]>(options_.buffer_size);
  return absl::OkStatus();
}

absl::Status AtomicFile::Append(absl::string_view data) {
  if (!status_.ok()) return status_;
  if (parked_) SLUICE_RETURN_IF_ERROR(Unpark());
  bytes_appended_ += data.size();
  if (buffered_ + data.size() <= options_.buffer_size) {
    std::memcpy(buffer_.get() + buffered_, data.data(), data.size());
    buffered_ += data.size();
    return absl::OkStatus();
  }
  SLUICE_RETURN_IF_ERROR(Flush());
  if (data.size() >= options_.buffer_size / 2) return WriteAll(data.data(), data.size());
  std::memcpy(buffer_.get(), data.data(), data.size());
  buffered_ = data.size();
  return absl::OkStatus();
}

absl::Status AtomicFile::Commit() {
  if (!status_.ok()) {  // A failed write, or already committed or abandoned.
    Abandon();
    return status_;
  }
  if (parked_) {
    if (absl::Status reopened = Unpark(); !reopened.ok()) {
      Abandon();
      return reopened;
    }
  }
  absl::Status status = Flush();
  if (status.ok() && options_.sync && ::fsync(fd_) != 0) {
    status = OsError(errno, temp_path_, ": fsync failed");
  }
  // close() can report a deferred write error (NFS): it counts.
  if (::close(fd_) != 0 && status.ok()) {
    status = OsError(errno, temp_path_, ": close failed");
  }
  fd_ = -1;
  CrashPoint("atomic_file_commit");  // crash tests: the data written, not yet in place
  if (status.ok() && ::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    status = OsError(errno, "cannot rename ", temp_path_, " to ", path_);
  }
  if (!status.ok()) {
    ::unlink(temp_path_.c_str());
    status_ = status;
    return status;
  }
  status_ = absl::FailedPreconditionError(absl::StrCat(path_, ": already committed"));
  if (options_.sync) return SyncDirectoryOf(path_);
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view data,
                                 AtomicFileOptions options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path, options));
  SLUICE_RETURN_IF_ERROR(file->Append(data));
  return file->Commit();
}

}  // namespace sluice
