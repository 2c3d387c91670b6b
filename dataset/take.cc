// Take(count): the first `count` elements of the input (all when count < 0).
// Errors from the input pass through and do not count as elements.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/counted_input_iterator.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class TakeDataset : public DatasetBase {
 public:
  TakeDataset(std::shared_ptr<const DatasetBase> input, int64_t count)
      : DatasetBase("Take", {std::move(input)}), count_(count) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;

  ElementSpec ComputeElementSpec() const override { return inputs()[0]->element_spec(); }
  int64_t Cardinality() const override {
    const int64_t n = inputs()[0]->Cardinality();
    if (count_ < 0) return n;
    if (count_ == 0) return 0;
    if (n == kInfiniteCardinality) return count_;
    if (n == kUnknownCardinality) return kUnknownCardinality;
    return std::min(n, count_);
  }
  std::string Describe() const override { return absl::StrCat("Take(", count_, ")"); }

  int64_t count() const { return count_; }

 private:
  int64_t count_;
};

class TakeIterator : public CountedInputIterator {
 public:
  TakeIterator(const TakeDataset* d, const IteratorContext& ctx,
               std::unique_ptr<IteratorBase> input)
      : CountedInputIterator(d, ctx, std::move(input), d->count(), "taken") {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    // Past the count the input is not read again: it may be expensive.
    if (ended_ || (count_ >= 0 && counted_ >= count_)) return std::nullopt;
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
    if (!e) {
      ended_ = true;
      return std::nullopt;
    }
    ++counted_;
    return e;
  }
};

absl::StatusOr<std::unique_ptr<IteratorBase>> TakeDataset::MakeIterator(
    const IteratorContext& ctx) const {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(new TakeIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::Take(int64_t count) const {
  return Dataset(std::make_shared<TakeDataset>(base(), count));
}

}  // namespace sluice
