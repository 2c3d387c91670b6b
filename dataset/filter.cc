// Filter(predicate): the input elements for which predicate returns true.
// Predicate errors name this node and the INPUT element's index, since the
// element that failed was never output.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class FilterDataset : public DatasetBase {
 public:
  FilterDataset(std::shared_ptr<const DatasetBase> input, PredicateFn predicate)
      : DatasetBase("Filter", {std::move(input)}), predicate_(std::move(predicate)) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  // Depends on the predicate; an infinite input may still yield nothing.
  ElementSpec ComputeElementSpec() const override { return inputs()[0]->element_spec(); }
  int64_t Cardinality() const override {
    return inputs()[0]->Cardinality() == 0 ? 0 : kUnknownCardinality;
  }

  const PredicateFn& predicate() const { return predicate_; }

 private:
  PredicateFn predicate_;
};

class FilterIterator : public IteratorBase {
 public:
  FilterIterator(const FilterDataset* d, const IteratorContext& ctx,
                 std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kSync), d_(d), input_(std::move(input)) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    while (true) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
      if (!in) return std::nullopt;
      const int64_t index = next_index_++;
      absl::StatusOr<bool> keep = d_->predicate()(*in);
      if (!keep.ok()) return Annotate(keep.status(), index);
      if (*keep) return in;
    }
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    (*state->mutable_ints())["next_index"] = next_index_;
    return SaveInput(input_.get(), state);
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(next_index_, SavedInt(state, "next_index"));
    return RestoreInput(input_.get(), state);
  }

 private:
  const FilterDataset* d_;
  std::unique_ptr<IteratorBase> input_;
  int64_t next_index_ = 0;  // index of the next input element
};

absl::StatusOr<std::unique_ptr<IteratorBase>> FilterDataset::MakeIterator(
    const IteratorContext& ctx) const {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(new FilterIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::Filter(PredicateFn predicate) const {
  return Dataset(std::make_shared<FilterDataset>(base(), std::move(predicate)));
}

}  // namespace sluice
