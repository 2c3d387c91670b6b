// TextLine(files, {compression, skip_header_lines, ...}): the lines of text files as scalar
// strings, like tf.data.TextLineDataset.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "io/input_stream.h"

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
  // One open file: its lines read through a buffer, counted with their byte offsets.
  struct OpenFile {
    std::string path;
    std::unique_ptr<BufferedInputStream> in;
    int64_t line = 0;  // lines read so far (the next line's 0-based number)
  };

  class TextLineIterator : public IteratorBase {
   public:
    TextLineIterator(const TextLineDataset* d, const IteratorContext& ctx)
        : IteratorBase(d, ctx, NodeKind::kSource), d_(d) {}

   protected:
    absl::StatusOr<std::optional<Element>> GetNextInternal() override {
      while (file_ < d_->files_.size()) {
        if (!open_) {
          absl::Status s = Open(start_line_, start_offset_);
          start_line_ = 0;
          start_offset_ = 0;
          if (!s.ok()) {
            // The error in the file's turn; the next call goes on with the next file.
            ++file_;
            return s;
          }
        }
        std::string line;
        absl::StatusOr<bool> more = ReadLine(&line);
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
      ints["line"] = open_ ? open_->line : start_line_;
      ints["offset"] = static_cast<int64_t>(open_ ? open_->in->position() : start_offset_);
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
    // Opens files_[file_] at line `line`, which starts at uncompressed offset `offset` (0, 0: the
    // start, past the header lines). An uncompressed file seeks; a compressed one is read forward.
    absl::Status Open(int64_t line, uint64_t offset) {
      const std::string& path = d_->files_[file_];
      const TextLineOptions& o = d_->options_;
      const Compression compression = o.compression.value_or(GuessCompression(path));
      auto file = std::make_unique<OpenFile>();
      file->path = path;
      if (compression == Compression::kNone) {
        SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<FileInputStream> stream,
                                FileInputStream::Open(path));
        if (offset > 0) SLUICE_RETURN_IF_ERROR(stream->Seek(offset));
        file->in = std::make_unique<BufferedInputStream>(std::move(stream), o.buffer_size);
        if (offset > 0) file->in->Reset(offset);
        file->line = line;
      } else {
        SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> stream,
                                OpenInputStream(path, compression, o.buffer_size));
        file->in = std::make_unique<BufferedInputStream>(std::move(stream), o.buffer_size);
      }
      open_ = std::move(file);
      // Forward to the restored line (compressed files), or past the header lines.
      const int64_t target = std::max(line, o.skip_header_lines);
      std::string skipped;
      while (open_->line < target) {
        SLUICE_ASSIGN_OR_RETURN(const bool more, ReadLine(&skipped));
        if (!more) {
          if (line == 0) return absl::OkStatus();  // fewer lines than the header: no lines
          return absl::DataLossError(absl::StrCat(path, ": ends after ", open_->line,
                                                  " lines, but the checkpoint is at line ", line,
                                                  " (has the file changed?)"));
        }
      }
      if (line > 0 && open_->in->position() != offset) {
        return absl::DataLossError(
            absl::StrCat(path, ": line ", line, " starts at offset ", open_->in->position(),
                         ", but the checkpoint has offset ", offset, " (has the file changed?)"));
      }
      return absl::OkStatus();
    }

    // The next line of the open file without its "\n" (or "\r\n"); false at the end. The last
    // line needs no newline; a line longer than max_line_bytes is DataLoss with its place.
    absl::StatusOr<bool> ReadLine(std::string* line) {
      line->clear();
      BufferedInputStream& in = *open_->in;
      const uint64_t start = in.position();
      bool any = false;
      while (true) {
        SLUICE_ASSIGN_OR_RETURN(const size_t available, in.Ensure(1));
        if (available == 0) break;  // the end: a last line without "\n", or nothing
        any = true;
        const char* data = in.data();
        const void* newline = std::memchr(data, '\n', available);
        const size_t take =
            newline ? static_cast<size_t>(static_cast<const char*>(newline) - data) : available;
        if (line->size() + take > d_->options_.max_line_bytes) {
          return absl::DataLossError(absl::StrCat(
              open_->path, ": line ", open_->line + 1, " (at offset ", start, ") is longer than ",
              d_->options_.max_line_bytes, " bytes (TextLineOptions::max_line_bytes)"));
        }
        line->append(data, take);
        in.Consume(take + (newline ? 1 : 0));
        if (newline) break;
      }
      if (!any) return false;
      if (!line->empty() && line->back() == '\r') line->pop_back();
      ++open_->line;
      return true;
    }

    const TextLineDataset* d_;
    size_t file_ = 0;
    std::unique_ptr<OpenFile> open_;  // files_[file_], once opened
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
