#ifndef SLUICE_IO_TFRECORD_WRITER_H_
#define SLUICE_IO_TFRECORD_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "io/atomic_file.h"
#include "io/compression.h"

namespace sluice {

struct TFRecordWriterOptions {
  Compression compression = Compression::kNone;
  int compression_level = -1;  // zlib's: -1 (default, 6) or 0..9.
  // fsync before the file is renamed into place (see AtomicFileOptions::sync).
  bool sync = true;
};

// Writes a TFRecord file (optionally GZIP/ZLIB-compressed as a whole, like TensorFlow).
class TFRecordWriter {
 public:
  // Writes to a temporary file beside `path`; Close() flushes and renames it into place.
  // Destroying a writer that was not closed removes the temporary file (a crash leaves no
  // half-written file at path).
  static absl::StatusOr<std::unique_ptr<TFRecordWriter>> Open(std::string path,
                                                              TFRecordWriterOptions options = {});
  ~TFRecordWriter();
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  // Errors are sticky; Write after Close is FailedPrecondition.
  absl::Status Write(absl::string_view record);
  absl::Status Close();
  // Frees the file descriptor and buffers until the next Write (AtomicFile::Park). A compressed
  // file's stream is ended and the next Write starts another: several gzip members, or zlib
  // streams, one after the other, which TFRecordReader reads as one stream. Costs a few bytes and
  // the compression's history, so parking is for writers of many files at once.
  absl::Status Park();
  int64_t records_written() const { return records_written_; }
  const std::string& path() const { return file_->path(); }

 private:
  TFRecordWriter(std::unique_ptr<AtomicFile> file, TFRecordWriterOptions options);
  // A compressor writing into file_.
  absl::StatusOr<std::unique_ptr<ZlibCompressor>> NewCompressor() const;
  absl::Status Emit(absl::string_view bytes);

  std::unique_ptr<AtomicFile> file_;
  TFRecordWriterOptions options_;
  std::unique_ptr<ZlibCompressor> compressor_;  // Null when uncompressed, and while parked.
  int64_t records_written_ = 0;
  bool closed_ = false;
  absl::Status status_;
};

}  // namespace sluice

#endif  // SLUICE_IO_TFRECORD_WRITER_H_
