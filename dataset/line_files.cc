#include "dataset/line_files.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset_base.h"

namespace sluice {

absl::StatusOr<bool> LineFiles::Next(std::string* line) {
  while (file_ < files_.size()) {
    if (!open_) {
      const std::string& path = files_[file_];
      absl::StatusOr<std::unique_ptr<LineReader>> opened =
          LineReader::Open(path,
                           {.compression = options_.compression.value_or(GuessCompression(path)),
                            .max_line_bytes = options_.max_line_bytes,
                            .buffer_size = options_.buffer_size},
                           start_line_, start_offset_, options_.skip_lines);
      start_line_ = 0;
      start_offset_ = 0;
      if (!opened.ok()) {
        ++file_;  // the error in the file's turn, then the next file
        return opened.status();
      }
      open_ = *std::move(opened);
    }
    const uint64_t offset = open_->offset();
    absl::StatusOr<bool> more = open_->ReadLine(line);
    if (more.ok() && *more) {
      first_line_ = open_->line();
      first_offset_ = offset;
      return true;
    }
    // A line too long was skipped: the file goes on after it.
    if (!more.ok() && open_->skipped_long_line()) return more.status();
    open_.reset();
    ++file_;
    if (!more.ok()) return more.status();
  }
  return false;
}

absl::StatusOr<bool> LineFiles::AppendNextLine(std::string* line) {
  if (!open_) return false;
  const absl::string_view line_break = open_->dropped_cr() ? "\r\n" : "\n";
  absl::StatusOr<bool> more = open_->ReadLine(&next_line_);
  if (more.ok() && !*more) return false;  // Next ends the file
  if (more.ok() && line->size() + line_break.size() + next_line_.size() > options_.max_line_bytes) {
    more = absl::DataLossError(absl::StrCat(open_->path(), ": the record from line ", first_line_,
                                            " (at offset ", first_offset_, ") runs on past ",
                                            options_.max_line_bytes,
                                            " bytes (max_line_bytes) at line ", open_->line()));
  }
  if (!more.ok()) {
    // Where the next record starts is unknown: the file ends here.
    open_.reset();
    ++file_;
    return more.status();
  }
  absl::StrAppend(line, line_break, next_line_);
  return true;
}

void LineFiles::Save(proto::IteratorStateProto* state) const {
  auto& ints = *state->mutable_ints();
  ints["file"] = static_cast<int64_t>(file_);
  ints["line"] = open_ ? open_->line() : start_line_;
  ints["offset"] = static_cast<int64_t>(open_ ? open_->offset() : start_offset_);
}

absl::Status LineFiles::Restore(const proto::IteratorStateProto& state) {
  SLUICE_ASSIGN_OR_RETURN(const int64_t file, SavedInt(state, "file"));
  SLUICE_ASSIGN_OR_RETURN(const int64_t line, SavedInt(state, "line"));
  SLUICE_ASSIGN_OR_RETURN(const int64_t offset, SavedInt(state, "offset"));
  // Every line read takes at least one byte.
  if (file < 0 || file > static_cast<int64_t>(files_.size()) || line < 0 || offset < line) {
    return absl::DataLossError(absl::StrCat("checkpoint of ", state.node(), " is at file ", file,
                                            " of ", files_.size(), ", line ", line, ", offset ",
                                            offset));
  }
  open_.reset();
  file_ = static_cast<size_t>(file);
  start_line_ = line;
  start_offset_ = static_cast<uint64_t>(offset);
  return absl::OkStatus();
}

}  // namespace sluice
