#include "io/tfrecord_writer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "io/crc32c.h"
#include "io/tfrecord_format.h"

namespace sluice {

TFRecordWriter::TFRecordWriter(std::unique_ptr<AtomicFile> file, TFRecordWriterOptions options)
    : file_(std::move(file)), options_(options) {}

// The compressor refers to file_ through its sink: destroy it first.
TFRecordWriter::~TFRecordWriter() { compressor_.reset(); }

absl::StatusOr<std::unique_ptr<TFRecordWriter>> TFRecordWriter::Open(
    std::string path, TFRecordWriterOptions options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file,
                          AtomicFile::Create(std::move(path), {.sync = options.sync}));
  auto writer = std::unique_ptr<TFRecordWriter>(new TFRecordWriter(std::move(file), options));
  if (options.compression != Compression::kNone) {
    SLUICE_ASSIGN_OR_RETURN(writer->compressor_, writer->NewCompressor());
  }
  return writer;
}

absl::StatusOr<std::unique_ptr<ZlibCompressor>> TFRecordWriter::NewCompressor() const {
  AtomicFile* sink = file_.get();
  return ZlibCompressor::Create(options_.compression, options_.compression_level,
                                [sink](absl::string_view bytes) { return sink->Append(bytes); });
}

absl::Status TFRecordWriter::Emit(absl::string_view bytes) {
  if (options_.compression == Compression::kNone) return file_->Append(bytes);
  if (compressor_ == nullptr) {  // parked
    SLUICE_ASSIGN_OR_RETURN(compressor_, NewCompressor());
  }
  return compressor_->Write(bytes);
}

absl::Status TFRecordWriter::Park() {
  if (!status_.ok()) return status_;
  if (closed_) return absl::FailedPreconditionError(absl::StrCat(path(), ": Park after Close"));
  absl::Status s = compressor_ ? compressor_->Finish() : absl::OkStatus();
  compressor_.reset();
  if (s.ok()) s = file_->Park();
  if (!s.ok()) status_ = s;
  return s;
}

absl::Status TFRecordWriter::Write(absl::string_view record) {
  if (!status_.ok()) return status_;
  if (closed_) return absl::FailedPreconditionError(absl::StrCat(path(), ": Write after Close"));
  char header[tfrecord::kHeaderSize];
  tfrecord::EncodeHeader(header, record.size());
  char footer[tfrecord::kFooterSize];
  tfrecord::EncodeFixed32(footer, MaskCrc32c(Crc32c(record)));
  absl::Status s = Emit(absl::string_view(header, sizeof(header)));
  if (s.ok()) s = Emit(record);
  if (s.ok()) s = Emit(absl::string_view(footer, sizeof(footer)));
  if (!s.ok()) return status_ = s;
  ++records_written_;
  return absl::OkStatus();
}

absl::Status TFRecordWriter::Close() {
  if (!status_.ok()) {
    file_->Abandon();
    return status_;
  }
  if (closed_) return absl::FailedPreconditionError(absl::StrCat(path(), ": closed twice"));
  closed_ = true;
  absl::Status s = compressor_ ? compressor_->Finish() : absl::OkStatus();
  if (s.ok()) {
    s = file_->Commit();
  } else {
    file_->Abandon();
  }
  if (!s.ok()) status_ = s;
  return s;
}

}  // namespace sluice
