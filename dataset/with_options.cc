// WithOptions(options): sets pipeline-wide options; passes elements through.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class OptionsDataset : public DatasetBase {
 public:
  OptionsDataset(std::shared_ptr<const DatasetBase> input, Options options)
      : DatasetBase("WithOptions", {std::move(input)}), options_(options) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
    return std::unique_ptr<IteratorBase>(new PassThroughIterator(this, ctx, std::move(input)));
  }
  ElementSpec ComputeElementSpec() const override { return inputs()[0]->element_spec(); }
  int64_t Cardinality() const override { return inputs()[0]->Cardinality(); }
  const Options* options() const override { return &options_; }

 private:
  class PassThroughIterator : public IteratorBase {
   public:
    PassThroughIterator(const DatasetBase* d, const IteratorContext& ctx,
                        std::unique_ptr<IteratorBase> input)
        : IteratorBase(d, ctx, NodeKind::kSync), input_(std::move(input)) {}

   protected:
    absl::StatusOr<std::optional<Element>> GetNextInternal() override { return input_->GetNext(); }
    NextReadiness WaitForNextInternal(std::chrono::steady_clock::time_point deadline) override {
      return input_->WaitForNext(deadline);
    }
    absl::Status SaveInternal(proto::IteratorStateProto* state) override {
      return SaveInput(input_.get(), state);
    }
    absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
      return RestoreInput(input_.get(), state);
    }

   private:
    std::unique_ptr<IteratorBase> input_;
  };

  Options options_;
};

}  // namespace

Dataset Dataset::WithOptions(Options options) const {
  // On another WithOptions, one node with the two merged (this one's fields win where set), as
  // tf.data merges them: the same options, and one node, not two, in stats and checkpoints.
  if (const auto* inner = dynamic_cast<const OptionsDataset*>(base().get())) {
    return Dataset(std::make_shared<OptionsDataset>(inner->inputs()[0],
                                                    inner->options()->MergedWith(options)));
  }
  return Dataset(std::make_shared<OptionsDataset>(base(), options));
}

}  // namespace sluice
