#ifndef SLUICE_IO_RECORD_INDEX_H_
#define SLUICE_IO_RECORD_INDEX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sluice {

// The record offsets of an uncompressed TFRecord file: O(1) seek, sharding, random access.
//
// Saved as a little-endian binary file:
//   "SLUICEIX" | uint32 version (1) | uint32 0 | uint64 file size | int64 file mtime (ns) |
//   uint64 record count n | n x uint64 record offset | uint32 masked CRC-32C of all before.
// The size and mtime tie an index to the TFRecord file it was built from.
class RecordIndex {
 public:
  RecordIndex() = default;

  // One pass over the record headers, verifying their length CRCs and seeking past the payloads
  // (data CRCs are not read). DataLoss on a corrupt header or a truncated record.
  static absl::StatusOr<RecordIndex> Build(const std::string& tfrecord_path);
  // FailedPrecondition for a stale index (the file's size or mtime differ from the ones
  // recorded), DataLoss for a corrupt one, NotFound when either file is missing.
  static absl::StatusOr<RecordIndex> Load(const std::string& index_path,
                                          const std::string& tfrecord_path);
  // Atomic (written to a temporary file, then renamed).
  absl::Status Save(const std::string& index_path) const;
  // Loads tfrecord_path + ".index", or builds the index when that file is missing, stale or
  // corrupt, and then tries to save it there. Failing to save (a read-only directory) is not an
  // error: the index is only a cache.
  static absl::StatusOr<RecordIndex> LoadOrBuild(const std::string& tfrecord_path);
  static std::string IndexPathFor(const std::string& tfrecord_path) {
    return tfrecord_path + ".index";
  }

  int64_t size() const { return static_cast<int64_t>(offsets_.size()); }
  // Start of record i's header. 0 <= i < size().
  uint64_t offset(int64_t i) const { return offsets_[i]; }
  // Length of record i's data (without the 16 framing bytes).
  uint64_t length(int64_t i) const {
    const uint64_t end = i + 1 < size() ? offsets_[i + 1] : file_size_;
    return end - offsets_[i] - 16;
  }
  // Records [begin, end) of shard `shard_index` of `num_shards`: contiguous, covering every
  // record exactly once over all shards, sizes differing by at most 1 (the first size() %
  // num_shards shards get one more). Needs num_shards > 0 and 0 <= shard_index < num_shards;
  // otherwise the range is empty.
  std::pair<int64_t, int64_t> ShardRange(int64_t num_shards, int64_t shard_index) const;

  uint64_t file_size() const { return file_size_; }
  int64_t file_mtime_ns() const { return file_mtime_ns_; }

 private:
  uint64_t file_size_ = 0;
  int64_t file_mtime_ns_ = 0;
  std::vector<uint64_t> offsets_;
};

// Thread-safe random access to the records of an uncompressed TFRecord file, with pread(2).
class IndexedTFRecordFile {
 public:
  // Opens the file and its index (RecordIndex::LoadOrBuild).
  static absl::StatusOr<std::unique_ptr<IndexedTFRecordFile>> Open(std::string path,
                                                                   bool verify_crc = true);
  ~IndexedTFRecordFile();
  IndexedTFRecordFile(const IndexedTFRecordFile&) = delete;
  IndexedTFRecordFile& operator=(const IndexedTFRecordFile&) = delete;

  int64_t size() const { return index_.size(); }
  const RecordIndex& index() const { return index_; }
  const std::string& path() const { return path_; }

  // Record i (0 <= i < size(), else OutOfRange); DataLoss when its bytes do not match the index
  // or (with verify_crc) its CRCs.
  absl::StatusOr<std::string> Read(int64_t i) const;
  // The same into `record`, reusing its capacity.
  absl::Status Read(int64_t i, std::string* record) const;

 private:
  IndexedTFRecordFile(std::string path, int fd, RecordIndex index, bool verify_crc)
      : path_(std::move(path)), fd_(fd), index_(std::move(index)), verify_crc_(verify_crc) {}

  std::string path_;
  int fd_;
  RecordIndex index_;
  bool verify_crc_;
};

}  // namespace sluice

#endif  // SLUICE_IO_RECORD_INDEX_H_
