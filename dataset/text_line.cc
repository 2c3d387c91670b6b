// TextLine(files, {compression, skip_header_lines, ...}): the lines of text files as scalar
// strings, like tf.data.TextLineDataset.

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/line_files.h"

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
  ElementSpec ComputeElementSpec() const override { return {{DType::kBytes, {}}}; }
  absl::Status AppendSourceFiles(std::vector<std::string>* files) const override {
    files->insert(files->end(), files_.begin(), files_.end());
    return absl::OkStatus();
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
        : IteratorBase(d, ctx, NodeKind::kSource),
          lines_(d->files_, {.compression = d->options_.compression,
                             .skip_lines = d->options_.skip_header_lines,
                             .max_line_bytes = d->options_.max_line_bytes,
                             .buffer_size = d->options_.buffer_size}) {}

   protected:
    absl::StatusOr<std::optional<Element>> GetNextInternal() override {
      std::string line;
      SLUICE_ASSIGN_OR_RETURN(const bool more, lines_.Next(&line));
      if (!more) return std::nullopt;
      return Element{Tensor::Scalar<std::string>(std::move(line))};
    }
    absl::Status SaveInternal(proto::IteratorStateProto* state) override {
      lines_.Save(state);
      return absl::OkStatus();
    }
    absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
      return lines_.Restore(state);
    }

   private:
    LineFiles lines_;
  };

  std::vector<std::string> files_;
  TextLineOptions options_;
};

}  // namespace

Dataset Dataset::TextLine(std::vector<std::string> files, TextLineOptions options) {
  const int reads = options.num_parallel_reads;
  if (reads == 1) return Dataset(std::make_shared<TextLineDataset>(std::move(files), options));
  options.num_parallel_reads = 1;
  return FromTensorSlices({Tensor::FromVector(files)})
      .Interleave(
          [options](const std::string& file) {
            return TextLine(std::vector<std::string>{file}, options);
          },
          {.cycle_length = reads,
           .num_parallel_calls = reads,
           .output_signature = ElementSpec({TensorSpec{DType::kBytes}})});
}

Dataset Dataset::TextLine(std::string file, TextLineOptions options) {
  return TextLine(std::vector<std::string>{std::move(file)}, options);
}

}  // namespace sluice
