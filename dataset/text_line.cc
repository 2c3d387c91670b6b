// TextLine(files, {compression, skip_header_lines, ...}): the lines of text files as scalar
// strings, like tf.data.TextLineDataset.

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "io/line_reader.h"

namespace sluice {
namespace {

class TextLineDataset : public DatasetBase {
 public:
  TextLineDataset(std::vector<std::string> files, TextLineOptions options)
      : DatasetBase("TextLine", {}), files_(std::move(files)), options_(options) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override {
    if (options_.skip_header_lines < 0 || options_.max_line_bytes < 1 || options_.buffer_size < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("TextLine: skip_header_lines ", options_.skip_header_lines,
                       ", max_line_bytes ", options_.max_line_bytes, " and buffer_size ",
                       options_.buffer_size, " must be >= 0, >= 1 and >= 1"));
    }
    return std::unique_ptr<IteratorBase>(new TextLineIterator(this, ctx));
  }
  std::string Describe() const override {
    std::string s =
        absl::StrCat("TextLine(", files_.size(), files_.size() == 1 ? " file" : " files");
    if (options_.compression) absl::StrAppend(&s, ", ", CompressionName(*options_.compression));
    if (options_.skip_header_lines > 0) {
      absl::StrAppend(&s, ", skip_header_lines=", options_.skip_header_lines);
    }
    return s + ")";
  }

 private:
  class TextLineIterator : public IteratorBase {
   public:
    TextLineIterator(const TextLineDataset* d, const IteratorContext& ctx)
        : IteratorBase(d, ctx, NodeKind::kSource), d_(d) {}

   protected:
    absl::StatusOr<std::optional<Element>> GetNextInternal() override {
      while (file_ < d_->files_.size()) {
        if (!open_) {
          const std::string& path = d_->files_[file_];
          const TextLineOptions& o = d_->options_;
          absl::StatusOr<std::unique_ptr<LineReader>> opened =
              LineReader::Open(path,
                               {.compression = o.compression.value_or(GuessCompression(path)),
                                .max_line_bytes = o.max_line_bytes,
                                .buffer_size = o.buffer_size},
                               start_line_, start_offset_, o.skip_header_lines);
          start_line_ = 0;
          start_offset_ = 0;
          if (!opened.ok()) {
            // The error in the file's turn; the next call goes on with the next file.
            ++file_;
            return opened.status();
          }
          open_ = *std::move(opened);
        }
        std::string line;
        absl::StatusOr<bool> more = open_->ReadLine(&line);
        if (more.ok() && *more) return Element{Tensor::Scalar<std::string>(std::move(line))};
        open_.reset();
        ++file_;
        if (!more.ok()) return more.status();
      }
      return std::nullopt;
    }

    absl::Status SaveInternal(proto::IteratorStateProto* state) override {
      auto& ints = *state->mutable_ints();
      ints["file"] = static_cast<int64_t>(file_);
      ints["line"] = open_ ? open_->line() : start_line_;
      ints["offset"] = static_cast<int64_t>(open_ ? open_->offset() : start_offset_);
      return absl::OkStatus();
    }

    absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
      SLUICE_ASSIGN_OR_RETURN(const int64_t file, SavedInt(state, "file"));
      SLUICE_ASSIGN_OR_RETURN(const int64_t line, SavedInt(state, "line"));
      SLUICE_ASSIGN_OR_RETURN(const int64_t offset, SavedInt(state, "offset"));
      if (file < 0 || file > static_cast<int64_t>(d_->files_.size()) || line < 0 || offset < 0 ||
          offset < line) {
        return absl::DataLossError(absl::StrCat("checkpoint of ", state.node(), " is at file ",
                                                file, " of ", d_->files_.size(), ", line ", line,
                                                ", offset ", offset));
      }
      open_.reset();
      file_ = static_cast<size_t>(file);
      start_line_ = line;
      start_offset_ = static_cast<uint64_t>(offset);
      return absl::OkStatus();  // The file is opened at the next GetNext.
    }

   private:
    const TextLineDataset* d_;
    size_t file_ = 0;
    std::unique_ptr<LineReader> open_;  // files_[file_]'s, once opened
    // Where files_[file_] is to be opened (a restored position).
    int64_t start_line_ = 0;
    uint64_t start_offset_ = 0;
  };

  std::vector<std::string> files_;
  TextLineOptions options_;
};

}  // namespace

Dataset Dataset::TextLine(std::vector<std::string> files, TextLineOptions options) {
  return Dataset(std::make_shared<TextLineDataset>(std::move(files), options));
}

Dataset Dataset::TextLine(std::string file, TextLineOptions options) {
  return TextLine(std::vector<std::string>{std::move(file)}, options);
}

}  // namespace sluice
