#include "io/line_reader.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {

absl::StatusOr<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path,
                                                             const LineReaderOptions& options,
                                                             int64_t line, uint64_t offset,
                                                             int64_t first_line) {
  if (options.max_line_bytes < 1 || options.buffer_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": max_line_bytes ",
                                                   options.max_line_bytes, " and buffer_size ",
                                                   options.buffer_size, " must be >= 1"));
  }
  std::unique_ptr<LineReader> reader;
  if (options.compression == Compression::kNone) {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<FileInputStream> stream, FileInputStream::Open(path));
    if (offset > 0) SLUICE_RETURN_IF_ERROR(stream->Seek(offset));
    auto in = std::make_unique<BufferedInputStream>(std::move(stream), options.buffer_size);
    if (offset > 0) in->Reset(offset);
    reader.reset(new LineReader(path, std::move(in), line, options.max_line_bytes));
  } else {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> stream,
                            OpenInputStream(path, options.compression, options.buffer_size));
    auto in = std::make_unique<BufferedInputStream>(std::move(stream), options.buffer_size);
    reader.reset(new LineReader(path, std::move(in), 0, options.max_line_bytes));
  }
  const int64_t target = std::max(line, first_line);
  std::string skipped;
  while (reader->line_ < target) {
    SLUICE_ASSIGN_OR_RETURN(const bool more, reader->ReadLine(&skipped));
    if (!more) {
      if (line == 0) return reader;  // fewer lines than first_line: at the end
      return absl::DataLossError(absl::StrCat(path, ": ends after ", reader->line_,
                                              " lines, but the checkpoint is at line ", line,
                                              " (has the file changed?)"));
    }
  }
  if (line > 0 && reader->offset() != offset) {
    return absl::DataLossError(absl::StrCat(path, ": line ", line, " starts at offset ",
                                            reader->offset(), ", but the checkpoint has offset ",
                                            offset, " (has the file changed?)"));
  }
  return reader;
}

absl::Status LineReader::SkipRestOfLine() {
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(const size_t available, in_->Ensure(1));
    if (available == 0) break;
    const void* newline = std::memchr(in_->data(), '\n', available);
    if (newline == nullptr) {
      in_->Consume(available);
      continue;
    }
    in_->Consume(static_cast<size_t>(static_cast<const char*>(newline) - in_->data()) + 1);
    break;
  }
  ++line_;
  skipped_long_line_ = true;
  return absl::OkStatus();
}

absl::StatusOr<bool> LineReader::ReadLine(std::string* line) {
  line->clear();
  skipped_long_line_ = false;
  const uint64_t start = in_->position();
  bool any = false;
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(const size_t available, in_->Ensure(1));
    if (available == 0) break;  // the end: a last line without "\n", or nothing
    any = true;
    const char* data = in_->data();
    const void* newline = std::memchr(data, '\n', available);
    const size_t take =
        newline ? static_cast<size_t>(static_cast<const char*>(newline) - data) : available;
    if (line->size() + take > max_line_bytes_) {
      line->clear();
      const int64_t number = line_ + 1;
      SLUICE_RETURN_IF_ERROR(SkipRestOfLine());
      return absl::DataLossError(absl::StrCat(path_, ": line ", number, " (at offset ", start,
                                              ") is longer than ", max_line_bytes_,
                                              " bytes (max_line_bytes); skipped it"));
    }
    line->append(data, take);
    in_->Consume(take + (newline ? 1 : 0));
    if (newline) break;
  }
  if (!any) return false;
  dropped_cr_ = !line->empty() && line->back() == '\r';
  if (dropped_cr_) line->pop_back();
  ++line_;
  return true;
}

}  // namespace sluice
