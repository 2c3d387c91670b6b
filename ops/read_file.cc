#include "ops/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "core/os_error.h"
#include "core/shape.h"

namespace sluice {
namespace {

absl::Status Errno(int error, const std::string& path, absl::string_view what) {
  return OsError(error, path, ": ", what);
}

// Closes the descriptor on every return path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

absl::StatusOr<Tensor> ReadFile(const std::string& path, const ReadFileOptions& options) {
  int raw;
  do {
    raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (raw < 0 && errno == EINTR);
  if (raw < 0) return Errno(errno, path, "cannot open");
  Fd fd(raw);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Errno(errno, path, "cannot stat");
  // As the file readers say it (io/input_stream.cc): Python raises IsADirectoryError for it.
  if (S_ISDIR(st.st_mode)) {
    return WithErrno(
        absl::FailedPreconditionError(absl::StrCat(path, ": is a directory, not a file")), EISDIR);
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  if (st.st_size > options.max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": ", st.st_size, " bytes is more than ReadFileOptions::max_bytes (",
                     options.max_bytes, ")"));
  }
  Tensor result(DType::kBytes, Shape{});
  std::string& bytes = *result.data<std::string>();
  bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (got < 0) {
      if (errno == EINTR) continue;
      return Errno(errno, path, absl::StrCat("read failed at offset ", done));
    }
    if (got == 0) {
      return absl::DataLossError(absl::StrCat(path, ": the file ended at ", done,
                                              " bytes while reading the ", bytes.size(),
                                              " its size said (it shrank?)"));
    }
    done += static_cast<size_t>(got);
  }
  return result;
}

}  // namespace sluice
