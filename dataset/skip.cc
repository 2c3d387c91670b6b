// Skip(count): the input without its first `count` elements; count < 0
// skips everything (as tf.data, without reading the input). Errors met while
// skipping are returned and do not count as skipped elements; skipping
// resumes at the next call, and the count survives checkpoints.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/counted_input_iterator.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class SkipDataset : public DatasetBase {
 public:
  SkipDataset(std::shared_ptr<const DatasetBase> input, int64_t count)
      : DatasetBase("Skip", {std::move(input)}), count_(count) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;

  ElementSpec ComputeElementSpec() const override { return inputs()[0]->element_spec(); }
  int64_t Cardinality() const override {
    const int64_t n = inputs()[0]->Cardinality();
    if (count_ < 0) return 0;
    if (n < 0) return n;  // infinite or unknown, like the input
    return std::max<int64_t>(0, n - count_);
  }
  std::string Describe() const override { return absl::StrCat("Skip(", count_, ")"); }

  int64_t count() const { return count_; }

 private:
  int64_t count_;
};

class SkipIterator : public CountedInputIterator {
 public:
  SkipIterator(const SkipDataset* d, const IteratorContext& ctx,
               std::unique_ptr<IteratorBase> input)
      : CountedInputIterator(d, ctx, std::move(input), d->count(), "skipped") {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    if (ended_ || count_ < 0) return std::nullopt;
    while (counted_ < count_) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
      if (!e) {
        ended_ = true;
        return std::nullopt;
      }
      ++counted_;
    }
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
    if (!e) ended_ = true;
    return e;
  }
};

absl::StatusOr<std::unique_ptr<IteratorBase>> SkipDataset::MakeIterator(
    const IteratorContext& ctx) const {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(new SkipIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::Skip(int64_t count) const {
  return Dataset(std::make_shared<SkipDataset>(base(), count));
}

}  // namespace sluice
