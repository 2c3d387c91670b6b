#ifndef SLUICE_IO_LINE_READER_H_
#define SLUICE_IO_LINE_READER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "io/compression.h"
#include "io/input_stream.h"

namespace sluice {

struct LineReaderOptions {
  Compression compression = Compression::kNone;
  // A longer line is DataLoss naming the file and line, and is skipped: the next read goes on
  // with the line after it.
  uint64_t max_line_bytes = 64 << 20;
  size_t buffer_size = 256 << 10;
};

// The lines of a text file, front to back, each without its "\n" or "\r\n" (the last line needs
// none), counted with their byte offsets in the (uncompressed) text: what TextLine and Csv read.
class LineReader {
 public:
  // Opens `path` at line `line`, which starts at uncompressed byte `offset` (a position that
  // line() and offset() reported), then skips to line `first_line` if it is further on. An
  // uncompressed file seeks; a compressed one is read forward, and a line that is not there or
  // not at `offset` is DataLoss ("has the file changed?"). A missing file is NotFound.
  static absl::StatusOr<std::unique_ptr<LineReader>> Open(const std::string& path,
                                                          const LineReaderOptions& options,
                                                          int64_t line = 0, uint64_t offset = 0,
                                                          int64_t first_line = 0);

  // The next line into `*line`; false at the end of the file.
  absl::StatusOr<bool> ReadLine(std::string* line);

  const std::string& path() const { return path_; }
  // Lines read so far: the next line's 0-based number.
  int64_t line() const { return line_; }
  // Where the next line starts.
  uint64_t offset() const { return in_->position(); }
  // Whether the line just read ended in "\r\n" (or "\r" at the end of the file), whose '\r' it
  // lost: a CSV field that spans lines keeps the file's line break.
  bool dropped_cr() const { return dropped_cr_; }
  // Whether the last ReadLine failed on a line longer than max_line_bytes, which it skipped: the
  // reader stands at the next line (after any other error, where it stands is unknown).
  bool skipped_long_line() const { return skipped_long_line_; }

 private:
  LineReader(std::string path, std::unique_ptr<BufferedInputStream> in, int64_t line,
             uint64_t max_line_bytes)
      : path_(std::move(path)), in_(std::move(in)), line_(line), max_line_bytes_(max_line_bytes) {}

  // Reads on past the next "\n" (or to the end), keeping nothing: the rest of a line too long.
  absl::Status SkipRestOfLine();

  std::string path_;
  std::unique_ptr<BufferedInputStream> in_;
  int64_t line_;
  uint64_t max_line_bytes_;
  bool dropped_cr_ = false;
  bool skipped_long_line_ = false;
};

}  // namespace sluice

#endif  // SLUICE_IO_LINE_READER_H_
