// IgnoreErrors(on_error): drops input results that are errors, counting them in
// this node's `skipped` and showing them to `on_error`, and reads on (internal
// iterators continue after an error). Cancellation is not an element's
// failure: it passes through.
#include <functional>
#include <utility>

#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class IgnoreErrorsDataset : public DatasetBase {
 public:
  IgnoreErrorsDataset(std::shared_ptr<const DatasetBase> input,
                      std::function<void(const absl::Status&)> on_error)
      : DatasetBase("IgnoreErrors", {std::move(input)}), on_error_(std::move(on_error)) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  // Unknown: any element may fail.
  ElementSpec ComputeElementSpec() const override { return inputs()[0]->element_spec(); }
  int64_t Cardinality() const override {
    const int64_t n = inputs()[0]->Cardinality();
    return n == 0 || n == kInfiniteCardinality ? n : kUnknownCardinality;
  }

  void ReportError(const absl::Status& status) const {
    if (on_error_) on_error_(status);
  }

 private:
  std::function<void(const absl::Status&)> on_error_;
};

class IgnoreErrorsIterator : public IteratorBase {
 public:
  IgnoreErrorsIterator(const IgnoreErrorsDataset* d, const IteratorContext& ctx,
                       std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kSync), d_(d), input_(std::move(input)) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    while (true) {
      absl::StatusOr<std::optional<Element>> in = input_->GetNext();
      if (in.ok() || in.status().code() == absl::StatusCode::kCancelled) return in;
      stats().skipped.fetch_add(1, std::memory_order_relaxed);
      d_->ReportError(in.status());
    }
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    return SaveInput(input_.get(), state);
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    return RestoreInput(input_.get(), state);
  }

 private:
  const IgnoreErrorsDataset* d_;
  std::unique_ptr<IteratorBase> input_;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> IgnoreErrorsDataset::MakeIterator(
    const IteratorContext& ctx) const {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(new IgnoreErrorsIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::IgnoreErrors(std::function<void(const absl::Status&)> on_error) const {
  return Dataset(std::make_shared<IgnoreErrorsDataset>(base(), std::move(on_error)));
}

}  // namespace sluice
