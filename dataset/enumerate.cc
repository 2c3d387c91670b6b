// Enumerate(start): prepends an int64 scalar counter to each element, like
// tf.data.Dataset.enumerate. The counter numbers the elements this node
// returns: an input error does not use up a number.
#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class EnumerateDataset : public DatasetBase {
 public:
  EnumerateDataset(std::shared_ptr<const DatasetBase> input, int64_t start)
      : DatasetBase("Enumerate", {std::move(input)}), start_(start) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
    return std::unique_ptr<IteratorBase>(new EnumerateIterator(this, ctx, std::move(input)));
  }
  // The counter stops before INT64_MAX (tf.data's zip of range(start, INT64_MAX) with the input).
  int64_t Cardinality() const override {
    const int64_t n = inputs()[0]->Cardinality();
    if (n < 0 || start_ < 0) return n;
    return std::min(n, INT64_MAX - start_);
  }
  // The counter, then the input's components.
  ElementSpec ComputeElementSpec() const override {
    return ElementSpec::Zipped({ElementSpec{{DType::kInt64, {}}}, inputs()[0]->element_spec()});
  }
  std::string Describe() const override { return absl::StrCat("Enumerate(", start_, ")"); }

 private:
  class EnumerateIterator : public IteratorBase {
   public:
    EnumerateIterator(const EnumerateDataset* d, const IteratorContext& ctx,
                      std::unique_ptr<IteratorBase> input)
        : IteratorBase(d, ctx, NodeKind::kSync), input_(std::move(input)), next_(d->start_) {}

   protected:
    absl::StatusOr<std::optional<Element>> GetNextInternal() override {
      if (next_ == INT64_MAX) return std::nullopt;  // the counter's range ends, as tf.data's
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
      if (!in) return std::nullopt;
      Element out;
      out.reserve(in->size() + 1);
      out.push_back(Tensor::Scalar<int64_t>(next_++));
      for (Tensor& t : *in) out.push_back(std::move(t));
      return out;
    }
    absl::Status SaveInternal(proto::IteratorStateProto* state) override {
      (*state->mutable_ints())["next"] = next_;
      return SaveInput(input_.get(), state);
    }
    absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
      SLUICE_ASSIGN_OR_RETURN(next_, SavedInt(state, "next"));
      return RestoreInput(input_.get(), state);
    }

   private:
    std::unique_ptr<IteratorBase> input_;
    int64_t next_;
  };

  int64_t start_;
};

}  // namespace

Dataset Dataset::Enumerate(int64_t start) const {
  return Dataset(std::make_shared<EnumerateDataset>(base(), start));
}

}  // namespace sluice
