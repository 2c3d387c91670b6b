#ifndef SLUICE_IO_TFRECORD_READER_H_
#define SLUICE_IO_TFRECORD_READER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/compression.h"
#include "io/input_stream.h"

namespace sluice {

// TFRecordReaderOptions::max_record_bytes (and TFRecordOptions') by default: 1 GiB.
inline constexpr uint64_t kDefaultMaxRecordBytes = uint64_t{1} << 30;

struct TFRecordReaderOptions {
  Compression compression = Compression::kNone;
  bool verify_crc = true;     // both the length CRC and the data CRC
  bool skip_corrupt = false;  // skip a corrupt/truncated record and count it instead of failing
  // With skip_corrupt: called with each skipped record's error, the DataLoss ReadRecord would
  // have returned (file, record, offset, what is wrong), as it is skipped.
  std::function<void(const absl::Status&)> on_skipped;
  size_t buffer_size = 256 << 10;
  // A record longer than this is ResourceExhausted before any of it is read: a length field
  // (genuine, or corrupt with verify_crc off) or a GZIP stream that inflates without end cannot
  // make the reader allocate more. A length up to 64 MiB is allocated at once (one read into
  // place); past that, memory grows with the bytes actually read, not with the length claimed.
  uint64_t max_record_bytes = kDefaultMaxRecordBytes;
};

// Reads the records of a TFRecord file in order (see io/tfrecord_format.h for the framing).
//
// Errors are DataLoss naming the file, the record index and its byte offset (the offset in the
// uncompressed stream for GZIP/ZLIB files), and are sticky: once ReadRecord fails it returns the
// same error until Seek. With skip_corrupt:
//  - a record whose data CRC does not match is skipped (its length, whose own CRC matched, is
//    trusted to find the next record);
//  - a record (or header) cut short by the end of the file is skipped and ends the stream;
//  - a header whose length CRC does not match cannot be trusted to find the next record: the
//    reader scans forward byte by byte from the next offset for a 12-byte header whose length
//    CRC verifies (a false match has odds of 2^-32 per position) and resumes there. The bytes
//    skipped count as ONE skipped record, however many records they held.
// A corrupt or truncated GZIP/ZLIB stream is an error even with skip_corrupt: nothing after it
// can be decoded. Without verify_crc, no corruption is detected (a bad length shows up as a
// truncated record).
//
// Not thread-safe.
class TFRecordReader {
 public:
  static absl::StatusOr<std::unique_ptr<TFRecordReader>> Open(std::string path,
                                                              TFRecordReaderOptions options = {});

  // Reads the next record into `record`, reusing its capacity. Returns false at the clean end
  // of the file.
  absl::StatusOr<bool> ReadRecord(std::string* record);

  int64_t records_read() const { return records_read_; }  // index of the next record
  int64_t records_skipped() const { return records_skipped_; }
  // Byte offset of the next record in the (uncompressed) stream.
  uint64_t offset() const { return offset_; }
  // Continues from `offset`, the start of record number `record_index` (as offset() and
  // records_read() reported them earlier, or a RecordIndex). Uncompressed files only: a
  // compressed one answers FailedPrecondition. Clears a sticky error.
  absl::Status Seek(uint64_t offset, int64_t record_index);
  const std::string& path() const { return path_; }
  const TFRecordReaderOptions& options() const { return options_; }

  // The last record ReadRecord returned: its index, the offset where it starts (uncompressed)
  // and its data CRC as its footer stores it (masked). Index -1 before the first and after a
  // Seek. What an iterator checkpoint keeps to recognise the file on restore.
  struct RecordMark {
    int64_t index = -1;
    uint64_t offset = 0;
    uint32_t crc = 0;
  };
  const RecordMark& last_record() const { return last_record_; }

 private:
  TFRecordReader(std::string path, TFRecordReaderOptions options, FileInputStream* file,
                 std::unique_ptr<InputStream> stream);
  // How reading one record ended: with the record, at the end of the records, past a corrupt one
  // that skip_corrupt skipped (ReadRecord reads on), or with the error now in status_.
  enum class Step { kRecord, kEnd, kSkipped, kFailed };
  Step ReadOneRecord(std::string* record);
  // The steps of ReadOneRecord: fewer than a header's bytes left (`avail`) at offset `start`; a
  // header whose length CRC fails; a record whose bytes and footer are all buffered; one read
  // from the stream.
  Step EndInHeader(uint64_t start, size_t avail);
  Step CorruptHeader(uint64_t start, const char* header, uint32_t stored, uint32_t computed);
  // A length over max_record_bytes: a truncation where it runs past the file's end (a corrupt
  // header whose CRC holds; skip_corrupt resynchronises after it), else a record too large.
  Step Oversized(uint64_t start, uint64_t length);
  // skip_corrupt past the header at `start` that `error` rejects: on to the next valid one.
  Step SkipToNextHeader(uint64_t start, const absl::Status& error);
  Step ReadBufferedRecord(uint64_t start, const char* header, uint64_t length, std::string* record);
  Step ReadStreamedRecord(uint64_t start, uint64_t length, std::string* record);
  // Makes `status` the reader's sticky error.
  Step Fail(absl::Status status);
  // A record skipped by skip_corrupt still counts as read; `why` is the error it would have been.
  void CountSkipped(const absl::Status& why) {
    ++records_read_;
    ++records_skipped_;
    if (options_.on_skipped) options_.on_skipped(why);
  }
  absl::StatusOr<size_t> ReadPayload(std::string* record, uint64_t length);
  // After a header whose length CRC fails: on to the next header whose CRC verifies (true), or
  // to the end of the stream (false).
  absl::StatusOr<bool> Resync();
  absl::Status StreamError(const absl::Status& status) const;
  // The start of an error message: "<path>: record <i> at [uncompressed ]offset <n>: ".
  std::string Where(uint64_t record_offset) const;
  absl::Status Truncated(uint64_t record_offset, uint64_t length, uint64_t got);
  absl::Status DataCrcError(uint64_t record_offset, uint32_t stored, uint32_t computed) const;

  std::string path_;
  TFRecordReaderOptions options_;
  FileInputStream* file_;  // The file when uncompressed (for Seek); owned by in_.
  BufferedInputStream in_;
  uint64_t offset_ = 0;
  int64_t records_read_ = 0;
  int64_t records_skipped_ = 0;
  RecordMark last_record_;
  bool at_end_ = false;
  absl::Status status_;
};

}  // namespace sluice

#endif  // SLUICE_IO_TFRECORD_READER_H_
