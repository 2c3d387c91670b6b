#ifndef SLUICE_TRAIN_CALLBACKS_SUMMARY_WRITER_H_
#define SLUICE_TRAIN_CALLBACKS_SUMMARY_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice::train::callbacks {

struct SummaryWriterOptions {
  // Flush to the file after every Scalar(), so that a live TensorBoard sees each point as soon
  // as it is written; otherwise only on Flush() and Close().
  bool flush_each = true;
  // Appended to the file name ("events.out.tfevents.<seconds>.<host><suffix>"), as tf.summary's
  // filename_suffix: keeps two writers started in the same second apart.
  std::string filename_suffix;
};

// Writes a TensorBoard event file, as tf.summary.create_file_writer: `<logdir>/
// events.out.tfevents.<seconds>.<host>`, TFRecord-framed Event protos, the first holding
// file_version "brain.Event:2", scalars as simple_value. The file is appended to in place (not
// renamed into place like TFRecordWriter's), because TensorBoard reads it while it grows.
// Not thread-safe.
class SummaryWriter {
 public:
  // Creates `logdir` (and its parents) if needed and writes the file_version record.
  static absl::StatusOr<std::unique_ptr<SummaryWriter>> Create(std::string logdir,
                                                               SummaryWriterOptions options = {});
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  // One scalar point of the series `tag`. Errors are sticky.
  absl::Status Scalar(absl::string_view tag, float value, int64_t step);
  absl::Status Flush();
  // Flushes and closes; nothing may follow.
  absl::Status Close();

  const std::string& path() const { return path_; }

 private:
  SummaryWriter(std::string path, std::FILE* file, SummaryWriterOptions options);
  absl::Status WriteEvent(const std::string& serialized_event);
  absl::Status Fail(absl::Status status);

  std::string path_;
  std::FILE* file_;
  SummaryWriterOptions options_;
  absl::Status status_;
};

}  // namespace sluice::train::callbacks

#endif  // SLUICE_TRAIN_CALLBACKS_SUMMARY_WRITER_H_
