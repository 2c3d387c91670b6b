#include "io/record_index.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/os_error.h"
#include "core/status_macros.h"
#include "io/atomic_file.h"
#include "io/crc32c.h"
#include "io/tfrecord_format.h"

namespace sluice {
namespace {

using tfrecord::kFooterSize;
using tfrecord::kHeaderSize;
using tfrecord::kOverhead;

constexpr char kMagic[8] = {'S', 'L', 'U', 'I', 'C', 'E', 'I', 'X'};
constexpr uint32_t kVersion = 1;
constexpr size_t kFixedSize = 8 + 4 + 4 + 8 + 8 + 8;  // Up to the offsets.

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

absl::StatusOr<int> OpenForReading(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return OsError(errno, path);
  return fd;
}

// Closes a descriptor when it goes out of scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads exactly the bytes the iovecs describe from `offset`; returns how many it read (fewer
// only at the end of the file).
absl::StatusOr<size_t> PreadFully(int fd, struct iovec* iov, int count, uint64_t offset,
                                  const std::string& path) {
  size_t total = 0;
  while (count > 0) {
    const ssize_t got = ::preadv(fd, iov, count, static_cast<off_t>(offset + total));
    if (got < 0) {
      if (errno == EINTR) continue;
      return OsError(errno, path, ": read at offset ", offset + total);
    }
    if (got == 0) break;
    total += static_cast<size_t>(got);
    // Drop what was filled; a short read is rare (a signal, the end of the file).
    size_t left = static_cast<size_t>(got);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return total;
}

std::string Where(const std::string& path, int64_t i, uint64_t offset) {
  return absl::StrCat(path, ": record ", i, " at offset ", offset, ": ");
}

absl::Status TruncatedError(const std::string& path, int64_t i, uint64_t offset, uint64_t length,
                            uint64_t got) {
  if (got < length) {
    return absl::DataLossError(absl::StrCat(Where(path, i, offset),
                                            "truncated record (header says ", length,
                                            " bytes, file ends after ", got, ")"));
  }
  return absl::DataLossError(absl::StrCat(Where(path, i, offset), "truncated record (header says ",
                                          length, " bytes; the file ends after them and ",
                                          got - length, " of the 4 CRC bytes)"));
}

absl::Status LengthCrcError(const std::string& path, int64_t i, uint64_t offset,
                            const char* header) {
  std::string hint;
  if (offset == 0 && static_cast<unsigned char>(header[0]) == 0x1f &&
      static_cast<unsigned char>(header[1]) == 0x8b) {
    hint = " (the file looks GZIP-compressed: indexes need uncompressed files)";
  }
  return absl::DataLossError(absl::StrCat(
      Where(path, i, offset),
      absl::StrFormat("length CRC mismatch (stored 0x%08x, computed 0x%08x)",
                      tfrecord::DecodeFixed32(header + 8), tfrecord::HeaderCrc(header)),
      hint));
}

}  // namespace

absl::StatusOr<RecordIndex> RecordIndex::Build(const std::string& tfrecord_path) {
  SLUICE_ASSIGN_OR_RETURN(const int fd, OpenForReading(tfrecord_path));
  FdCloser closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return OsError(errno, tfrecord_path);
  RecordIndex index;
  index.file_size_ = static_cast<uint64_t>(st.st_size);
  index.file_mtime_ns_ = MtimeNs(st);

  // Headers are read through a window of the file: small records share one pread, a large one
  // is jumped over.
  constexpr size_t kWindow = 64 << 10;
  auto window = std::make_unique_for_overwrite<char[]>(kWindow);
  uint64_t window_start = 0;
  size_t window_len = 0;
  const uint64_t size = index.file_size_;
  uint64_t offset = 0;
  for (int64_t i = 0; offset < size; ++i) {
    if (size - offset < kHeaderSize) {
      return absl::DataLossError(absl::StrCat(Where(tfrecord_path, i, offset),
                                              "truncated record header (12 bytes expected, "
                                              "file ends after ",
                                              size - offset, ")"));
    }
    if (offset < window_start || offset + kHeaderSize > window_start + window_len) {
      struct iovec iov = {window.get(),
                          static_cast<size_t>(std::min<uint64_t>(kWindow, size - offset))};
      SLUICE_ASSIGN_OR_RETURN(window_len, PreadFully(fd, &iov, 1, offset, tfrecord_path));
      window_start = offset;
      if (window_len < kHeaderSize) {  // The file shrank under us.
        return absl::DataLossError(
            absl::StrCat(Where(tfrecord_path, i, offset), "file ends inside the record header"));
      }
    }
    const char* header = window.get() + (offset - window_start);
    if (!tfrecord::HeaderCrcOk(header)) return LengthCrcError(tfrecord_path, i, offset, header);
    const uint64_t length = tfrecord::DecodeFixed64(header);
    const uint64_t after_header = size - offset - kHeaderSize;
    if (after_header < kFooterSize || length > after_header - kFooterSize) {
      return TruncatedError(tfrecord_path, i, offset, length, after_header);
    }
    index.offsets_.push_back(offset);
    offset += kOverhead + length;
  }
  return index;
}

absl::Status RecordIndex::Save(const std::string& index_path) const {
  std::string out(kFixedSize + 8 * offsets_.size() + 4, '\0');
  char* p = out.data();
  std::memcpy(p, kMagic, 8);
  tfrecord::EncodeFixed32(p + 8, kVersion);
  tfrecord::EncodeFixed32(p + 12, 0);
  tfrecord::EncodeFixed64(p + 16, file_size_);
  tfrecord::EncodeFixed64(p + 24, static_cast<uint64_t>(file_mtime_ns_));
  tfrecord::EncodeFixed64(p + 32, offsets_.size());
  for (size_t i = 0; i < offsets_.size(); ++i) {
    tfrecord::EncodeFixed64(p + kFixedSize + 8 * i, offsets_[i]);
  }
  const size_t body = out.size() - 4;
  tfrecord::EncodeFixed32(p + body, MaskCrc32c(Crc32c(absl::string_view(p, body))));
  // A torn index after a machine crash fails its CRC and is rebuilt: no fsync needed.
  return WriteFileAtomically(index_path, out, {.sync = false});
}

absl::StatusOr<RecordIndex> RecordIndex::Load(const std::string& index_path,
                                              const std::string& tfrecord_path) {
  std::string data;
  {
    SLUICE_ASSIGN_OR_RETURN(const int fd, OpenForReading(index_path));
    FdCloser closer{fd};
    struct stat st;
    if (::fstat(fd, &st) != 0) return OsError(errno, index_path);
    data.resize(static_cast<size_t>(st.st_size));
    struct iovec iov = {data.data(), data.size()};
    SLUICE_ASSIGN_OR_RETURN(const size_t got, PreadFully(fd, &iov, 1, 0, index_path));
    data.resize(got);
  }
  auto corrupt = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat(index_path, ": corrupt record index: ", why));
  };
  if (data.size() < kFixedSize + 4 || std::memcmp(data.data(), kMagic, 8) != 0) {
    return corrupt("not a sluice record index (bad magic or too short)");
  }
  const char* p = data.data();
  const uint32_t version = tfrecord::DecodeFixed32(p + 8);
  if (version != kVersion) {
    return corrupt(absl::StrCat("version ", version, ", expected ", kVersion));
  }
  const size_t body = data.size() - 4;
  if (tfrecord::DecodeFixed32(p + body) != MaskCrc32c(Crc32c(absl::string_view(p, body)))) {
    return corrupt("CRC mismatch");
  }
  const uint64_t count = tfrecord::DecodeFixed64(p + 32);
  if ((body - kFixedSize) % 8 != 0 || (body - kFixedSize) / 8 != count) {
    return corrupt(
        absl::StrCat("holds ", (body - kFixedSize) / 8, " offsets, header says ", count));
  }
  RecordIndex index;
  index.file_size_ = tfrecord::DecodeFixed64(p + 16);
  index.file_mtime_ns_ = static_cast<int64_t>(tfrecord::DecodeFixed64(p + 24));
  index.offsets_.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    index.offsets_[i] = tfrecord::DecodeFixed64(p + kFixedSize + 8 * i);
    // Differences, not sums: an offset near 2^64 must not wrap past the check.
    if ((i == 0 && index.offsets_[0] != 0) ||
        (i > 0 && (index.offsets_[i] < index.offsets_[i - 1] ||
                   index.offsets_[i] - index.offsets_[i - 1] < kOverhead))) {
      return corrupt(absl::StrCat("offset of record ", i, " is out of order"));
    }
  }
  if ((count == 0 && index.file_size_ != 0) ||
      (count > 0 &&
       (index.file_size_ < kOverhead || index.offsets_.back() > index.file_size_ - kOverhead))) {
    return corrupt("records do not end at the recorded file size");
  }

  struct stat st;
  if (::stat(tfrecord_path.c_str(), &st) != 0) return OsError(errno, tfrecord_path);
  if (static_cast<uint64_t>(st.st_size) != index.file_size_ ||
      MtimeNs(st) != index.file_mtime_ns_) {
    return absl::FailedPreconditionError(absl::StrCat(
        index_path, ": stale record index for ", tfrecord_path, ": built for a file of ",
        index.file_size_, " bytes modified at ", index.file_mtime_ns_, " ns, but it now has ",
        st.st_size, " bytes modified at ", MtimeNs(st), " ns; rebuild it"));
  }
  return index;
}

absl::StatusOr<RecordIndex> RecordIndex::LoadOrBuild(const std::string& tfrecord_path) {
  const std::string index_path = IndexPathFor(tfrecord_path);
  absl::StatusOr<RecordIndex> loaded = Load(index_path, tfrecord_path);
  if (loaded.ok()) return loaded;
  SLUICE_ASSIGN_OR_RETURN(RecordIndex built, Build(tfrecord_path));
  (void)built.Save(index_path);  // Only a cache: the index is good without it.
  return built;
}

std::pair<int64_t, int64_t> RecordIndex::ShardRange(int64_t num_shards, int64_t shard_index) const {
  if (num_shards <= 0 || shard_index < 0 || shard_index >= num_shards) return {0, 0};
  const int64_t n = size();
  const int64_t base = n / num_shards;
  const int64_t extra = n % num_shards;
  const int64_t begin = shard_index * base + std::min(shard_index, extra);
  return {begin, begin + base + (shard_index < extra ? 1 : 0)};
}

// ---------------------------------------------------------------------------------------------
// IndexedTFRecordFile

absl::StatusOr<std::unique_ptr<IndexedTFRecordFile>> IndexedTFRecordFile::Open(std::string path,
                                                                               bool verify_crc) {
  SLUICE_ASSIGN_OR_RETURN(const int fd, OpenForReading(path));
  FdCloser closer{fd};
  SLUICE_ASSIGN_OR_RETURN(RecordIndex index, RecordIndex::LoadOrBuild(path));
  // The index was checked against the path; make sure it describes the file we hold open.
  struct stat st;
  if (::fstat(fd, &st) != 0) return OsError(errno, path);
  if (static_cast<uint64_t>(st.st_size) != index.file_size() ||
      MtimeNs(st) != index.file_mtime_ns()) {
    return absl::AbortedError(absl::StrCat(path, ": the file changed while its index was loaded"));
  }
  closer.fd = -1;
  return std::unique_ptr<IndexedTFRecordFile>(
      new IndexedTFRecordFile(std::move(path), fd, std::move(index), verify_crc));
}

IndexedTFRecordFile::~IndexedTFRecordFile() { ::close(fd_); }

absl::StatusOr<std::string> IndexedTFRecordFile::Read(int64_t i) const {
  std::string record;
  SLUICE_RETURN_IF_ERROR(Read(i, &record));
  return record;
}

absl::Status IndexedTFRecordFile::Read(int64_t i, std::string* record) const {
  if (i < 0 || i >= size()) {
    return absl::OutOfRangeError(
        absl::StrCat(path_, ": record ", i, " is out of range [0, ", size(), ")"));
  }
  const uint64_t offset = index_.offset(i);
  const uint64_t length = index_.length(i);
  record->resize(length);
  char header[kHeaderSize];
  char footer[kFooterSize];
  struct iovec iov[3] = {{header, kHeaderSize}, {record->data(), length}, {footer, kFooterSize}};
  SLUICE_ASSIGN_OR_RETURN(const size_t got, PreadFully(fd_, iov, 3, offset, path_));
  if (got < kOverhead + length) {
    return absl::DataLossError(absl::StrCat(Where(path_, i, offset), "file ends after ", got,
                                            " of the record's ", kOverhead + length,
                                            " bytes (was it truncated after indexing?)"));
  }
  if (verify_crc_ && !tfrecord::HeaderCrcOk(header)) {
    return LengthCrcError(path_, i, offset, header);
  }
  if (tfrecord::DecodeFixed64(header) != length) {
    return absl::DataLossError(absl::StrCat(
        Where(path_, i, offset), "header says ", tfrecord::DecodeFixed64(header),
        " bytes, the index says ", length, " (was the file rewritten after indexing?)"));
  }
  if (verify_crc_) {
    const uint32_t stored = tfrecord::DecodeFixed32(footer);
    const uint32_t computed = MaskCrc32c(Crc32c(*record));
    if (stored != computed) {
      return absl::DataLossError(absl::StrCat(
          Where(path_, i, offset),
          absl::StrFormat("data CRC mismatch (stored 0x%08x, computed 0x%08x)", stored, computed)));
    }
  }
  return absl::OkStatus();
}

}  // namespace sluice
