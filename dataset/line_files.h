#ifndef SLUICE_DATASET_LINE_FILES_H_
#define SLUICE_DATASET_LINE_FILES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataset/proto/iterator_state.pb.h"
#include "io/compression.h"
#include "io/line_reader.h"

namespace sluice {

struct LineFilesOptions {
  std::optional<Compression> compression;  // unset: guessed from each file's suffix
  int64_t skip_lines = 0;                  // dropped at the start of every file (a header)
  uint64_t max_line_bytes = 64 << 20;
  size_t buffer_size = 256 << 10;
};

// The lines of a list of text files, one file after the other, and where they stand, for the
// iterators that read them (TextLine, Csv): the file, the line and its byte offset, saved in a
// checkpoint and restored by seeking (or reading forward in a compressed file).
class LineFiles {
 public:
  LineFiles(const std::vector<std::string>& files, LineFilesOptions options)
      : files_(files), options_(options) {}

  // The next line into `*line`, opening the files in turn; false after the last one. A line too
  // long is an error after which the next call reads the line after it; any other error (a file
  // that cannot be opened or read) ends that file: the next call goes on with the next, so that
  // IgnoreErrors can continue.
  absl::StatusOr<bool> Next(std::string* line);
  // For a record that goes on past the end of its line (a quoted CSV field holding a line break):
  // appends the line break (as in the file) and the file's next line to `*line`; false, with
  // nothing appended, at the end of the file. A `*line` that would grow past max_line_bytes is
  // DataLoss naming the record's first line, and ends the file (where the next record starts is
  // unknown).
  absl::StatusOr<bool> AppendNextLine(std::string* line);
  // The open file, after Next returned true: its path and the line just read (1-based) for errors.
  const LineReader& reader() const { return *open_; }
  // The 1-based number of the line that Next returned, which AppendNextLine adds on to.
  int64_t first_line() const { return first_line_; }

  void Save(proto::IteratorStateProto* state) const;
  // DataLoss for a position that cannot be one of these files'; the file opens at the next Next.
  absl::Status Restore(const proto::IteratorStateProto& state);

 private:
  const std::vector<std::string>& files_;
  const LineFilesOptions options_;
  size_t file_ = 0;
  std::unique_ptr<LineReader> open_;  // files_[file_]'s, once opened
  // Where files_[file_] is to be opened (a restored position).
  int64_t start_line_ = 0;
  uint64_t start_offset_ = 0;
  // Where the line Next returned starts, for errors about a record that AppendNextLine extended.
  int64_t first_line_ = 0;
  uint64_t first_offset_ = 0;
  std::string next_line_;  // AppendNextLine's, reused
};

}  // namespace sluice

#endif  // SLUICE_DATASET_LINE_FILES_H_
