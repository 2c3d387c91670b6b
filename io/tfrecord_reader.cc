#include "io/tfrecord_reader.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "io/crc32c.h"
#include "io/tfrecord_format.h"

namespace sluice {
namespace {

using tfrecord::kFooterSize;
using tfrecord::kHeaderSize;
using tfrecord::kOverhead;

// Records up to this size are read in one piece; longer ones grow the string as their bytes
// arrive, so that a corrupt length (unchecked without verify_crc) cannot allocate more than the
// file holds.
constexpr uint64_t kMaxUpfrontRecord = uint64_t{64} << 20;

}  // namespace

TFRecordReader::TFRecordReader(std::string path, TFRecordReaderOptions options,
                               FileInputStream* file, std::unique_ptr<InputStream> stream)
    : path_(std::move(path)),
      options_(options),
      file_(file),
      in_(std::move(stream), std::max<size_t>(options.buffer_size, 4096)) {}

absl::StatusOr<std::unique_ptr<TFRecordReader>> TFRecordReader::Open(
    std::string path, TFRecordReaderOptions options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> stream,
                          OpenInputStream(path, options.compression, options.buffer_size));
  FileInputStream* file = options.compression == Compression::kNone
                              ? static_cast<FileInputStream*>(stream.get())
                              : nullptr;
  return std::unique_ptr<TFRecordReader>(
      new TFRecordReader(std::move(path), options, file, std::move(stream)));
}

std::string TFRecordReader::Where(uint64_t record_offset) const {
  return absl::StrCat(path_, ": record ", records_read_, " at ", file_ ? "" : "uncompressed ",
                      "offset ", record_offset, ": ");
}

absl::Status TFRecordReader::Truncated(uint64_t record_offset, uint64_t length, uint64_t got) {
  const char* ends = file_ ? "file ends" : "stream ends";
  if (got < length) {
    return absl::DataLossError(absl::StrCat(Where(record_offset), "truncated record (header says ",
                                            length, " bytes, ", ends, " after ", got, ")"));
  }
  return absl::DataLossError(absl::StrCat(Where(record_offset), "truncated record (header says ",
                                          length, " bytes; the ", ends, " after them and ",
                                          got - length, " of the 4 CRC bytes)"));
}

absl::Status TFRecordReader::DataCrcError(uint64_t record_offset, uint32_t stored,
                                          uint32_t computed) const {
  return absl::DataLossError(absl::StrCat(
      Where(record_offset),
      absl::StrFormat("data CRC mismatch (stored 0x%08x, computed 0x%08x)", stored, computed)));
}

absl::StatusOr<bool> TFRecordReader::ReadRecord(std::string* record) {
  if (!status_.ok()) return status_;
  if (at_end_) return false;
  Step step;
  do {
    step = ReadOneRecord(record);
  } while (step == Step::kSkipped);
  if (step == Step::kFailed) return status_;
  return step == Step::kRecord;
}

absl::Status TFRecordReader::StreamError(const absl::Status& status) const {
  // The stream names the file and what went wrong; add where in the records it struck.
  return WithMessage(status,
                     absl::StrCat(status.message(), " (reading record ", records_read_, " at ",
                                  file_ ? "" : "uncompressed ", "offset ", offset_, ")"));
}

absl::StatusOr<size_t> TFRecordReader::ReadPayload(std::string* record, uint64_t length) {
  if (length <= kMaxUpfrontRecord) {
    record->resize(length);
    // Also fetch this record's CRC and the next header in the same read.
    return in_.ReadFully(record->data(), length, kOverhead);
  }
  uint64_t done = 0;
  while (done < length) {
    const uint64_t step = std::min(length - done, std::max(kMaxUpfrontRecord, done));
    record->resize(done + step);
    SLUICE_ASSIGN_OR_RETURN(size_t got, in_.ReadFully(record->data() + done, step));
    done += got;
    if (got < step) break;
  }
  return done;
}

absl::StatusOr<bool> TFRecordReader::Resync() {
  // in_.data() is the rejected header at offset_: look from the byte after it.
  in_.Consume(1);
  ++offset_;
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(size_t avail, in_.Ensure(kHeaderSize));
    if (avail < kHeaderSize) {  // Too short to hold a record: the stream ends here.
      in_.Consume(avail);
      offset_ += avail;
      return false;
    }
    const char* p = in_.data();
    const size_t last = avail - kHeaderSize;
    for (size_t i = 0; i <= last; ++i) {
      if (tfrecord::HeaderCrcOk(p + i)) {
        in_.Consume(i);
        offset_ += i;
        return true;
      }
    }
    in_.Consume(last + 1);
    offset_ += last + 1;
  }
}

TFRecordReader::Step TFRecordReader::Fail(absl::Status status) {
  status_ = std::move(status);
  return Step::kFailed;
}

// Inlined into ReadRecord, as ReadBufferedRecord into it: the steps of the common case cost no
// calls.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline TFRecordReader::Step TFRecordReader::ReadOneRecord(
    std::string* record) {
  const uint64_t start = offset_;
  const absl::StatusOr<size_t> ensured = in_.Ensure(kHeaderSize);
  if (!ensured.ok()) return Fail(StreamError(ensured.status()));
  const size_t avail = *ensured;
  if (avail < kHeaderSize) return EndInHeader(start, avail);
  const char* header = in_.data();
  const uint64_t length = tfrecord::DecodeFixed64(header);
  if (options_.verify_crc) {
    const uint32_t stored = tfrecord::DecodeFixed32(header + 8);
    const uint32_t computed = tfrecord::HeaderCrc(header);
    if (stored != computed) return CorruptHeader(start, header, stored, computed);
  }
  if (length > options_.max_record_bytes) return Oversized(start, length);
  if (length <= avail - kHeaderSize && kFooterSize <= avail - kHeaderSize - length) {
    return ReadBufferedRecord(start, header, length, record);
  }
  return ReadStreamedRecord(start, length, record);
}

TFRecordReader::Step TFRecordReader::EndInHeader(uint64_t start, size_t avail) {
  if (avail == 0) {
    at_end_ = true;
    return Step::kEnd;
  }
  absl::Status error =
      absl::DataLossError(absl::StrCat(Where(start), "truncated record header (12 bytes expected, ",
                                       file_ ? "file" : "stream", " ends after ", avail, ")"));
  if (!options_.skip_corrupt) return Fail(std::move(error));
  in_.Consume(avail);
  offset_ += avail;
  CountSkipped(error);
  at_end_ = true;
  return Step::kEnd;
}

TFRecordReader::Step TFRecordReader::CorruptHeader(uint64_t start, const char* header,
                                                   uint32_t stored, uint32_t computed) {
  const std::string what = absl::StrCat(
      Where(start),
      absl::StrFormat("length CRC mismatch (stored 0x%08x, computed 0x%08x)", stored, computed));
  if (!options_.skip_corrupt) {
    return Fail(absl::DataLossError(absl::StrCat(
        what, start == 0 && file_
                  ? WrongCompressionHint(absl::string_view(header, 2), Compression::kNone)
                  : "")));
  }
  return SkipToNextHeader(start, absl::DataLossError(what));
}

TFRecordReader::Step TFRecordReader::Oversized(uint64_t start, uint64_t length) {
  std::optional<uint64_t> left;  // the bytes after the header, where the file's size is known
  if (file_ != nullptr) {
    const absl::StatusOr<uint64_t> size = file_->Size();
    if (size.ok() && *size >= start + kHeaderSize) left = *size - start - kHeaderSize;
  }
  if (left && (length > *left || *left - length < kFooterSize)) {
    // Past the file's end: a corrupt header whose CRC holds, not a record too large.
    absl::Status error = Truncated(start, length, std::min(length, *left));
    if (!options_.skip_corrupt) return Fail(std::move(error));
    return SkipToNextHeader(start, error);
  }
  // A record that is there, only larger than allowed: an error even with skip_corrupt (a resync
  // would scan its gigabytes for a header, and could find a false one).
  return Fail(absl::ResourceExhaustedError(
      absl::StrCat(Where(start), "a record of ", length, " bytes exceeds max_record_bytes (",
                   options_.max_record_bytes,
                   "); to read this file, raise max_record_bytes (Python: Dataset.tfrecord's; C++: "
                   "TFRecordOptions', TFRecordReaderOptions')")));
}

TFRecordReader::Step TFRecordReader::SkipToNextHeader(uint64_t start, const absl::Status& error) {
  const absl::StatusOr<bool> found = Resync();
  if (!found.ok()) {
    CountSkipped(error);
    return Fail(StreamError(found.status()));
  }
  CountSkipped(
      absl::Status(error.code(), absl::StrCat(error.message(), "; ", offset_ - start,
                                              *found ? " bytes to the next valid header passed over"
                                                     : " bytes to the end passed over")));
  return Step::kSkipped;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline TFRecordReader::Step TFRecordReader::ReadBufferedRecord(
    uint64_t start, const char* header, uint64_t length, std::string* record) {
  // No stream calls: the common case for small records.
  const char* data = header + kHeaderSize;
  record->assign(data, length);
  if (options_.verify_crc) {
    const uint32_t stored = tfrecord::DecodeFixed32(data + length);
    const uint32_t computed = MaskCrc32c(Crc32c(absl::string_view(data, length)));
    if (stored != computed) {
      absl::Status error = DataCrcError(start, stored, computed);
      if (!options_.skip_corrupt) return Fail(std::move(error));
      in_.Consume(kOverhead + length);
      offset_ += kOverhead + length;
      CountSkipped(error);
      return Step::kSkipped;
    }
  }
  last_record_ = {records_read_, start, tfrecord::DecodeFixed32(data + length)};
  in_.Consume(kOverhead + length);
  offset_ += kOverhead + length;
  ++records_read_;
  return Step::kRecord;
}

TFRecordReader::Step TFRecordReader::ReadStreamedRecord(uint64_t start, uint64_t length,
                                                        std::string* record) {
  in_.Consume(kHeaderSize);
  const absl::StatusOr<size_t> payload = ReadPayload(record, length);
  if (!payload.ok()) return Fail(StreamError(payload.status()));
  const uint64_t got = *payload;
  char footer[kFooterSize];
  size_t footer_got = 0;
  if (got == length) {
    const absl::StatusOr<size_t> footer_read = in_.ReadFully(footer, kFooterSize);
    if (!footer_read.ok()) return Fail(StreamError(footer_read.status()));
    footer_got = *footer_read;
  }
  if (got < length || footer_got < kFooterSize) {
    absl::Status error = Truncated(start, length, got + footer_got);
    if (!options_.skip_corrupt) return Fail(std::move(error));
    offset_ = in_.position();
    CountSkipped(error);
    at_end_ = true;
    return Step::kEnd;
  }
  if (options_.verify_crc) {
    const uint32_t stored = tfrecord::DecodeFixed32(footer);
    const uint32_t computed = MaskCrc32c(Crc32c(*record));
    if (stored != computed) {
      absl::Status error = DataCrcError(start, stored, computed);
      if (!options_.skip_corrupt) return Fail(std::move(error));
      offset_ += kOverhead + length;
      CountSkipped(error);
      return Step::kSkipped;
    }
  }
  last_record_ = {records_read_, start, tfrecord::DecodeFixed32(footer)};
  offset_ += kOverhead + length;
  ++records_read_;
  return Step::kRecord;
}

absl::Status TFRecordReader::Seek(uint64_t offset, int64_t record_index) {
  if (file_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": cannot seek in a ", CompressionName(options_.compression),
        "-compressed file (offsets are in the uncompressed stream); read forward instead"));
  }
  if (record_index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": Seek to a negative record index ", record_index));
  }
  if (!in_.SkipWithinBuffer(offset)) {
    SLUICE_RETURN_IF_ERROR(file_->Seek(offset));
    in_.Reset(offset);
  }
  offset_ = offset;
  records_read_ = record_index;
  last_record_ = {};
  at_end_ = false;
  status_ = absl::OkStatus();
  return absl::OkStatus();
}

}  // namespace sluice
