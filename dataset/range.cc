// Range(start, stop, step): int64 scalars, like tf.data.Dataset.range.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

// Wide enough for any difference of two int64s (__extension__: not ISO C++, so -Wpedantic).
__extension__ typedef __int128 Int128;

class RangeDataset : public DatasetBase {
 public:
  RangeDataset(int64_t start, int64_t stop, int64_t step)
      : DatasetBase("Range", {}), start_(start), stop_(stop), step_(step) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override {
    if (step_ == 0) return absl::InvalidArgumentError(absl::StrCat(name(), ": step must not be 0"));
    return std::unique_ptr<IteratorBase>(new RangeIterator(this, ctx));
  }
  int64_t Cardinality() const override {
    if (step_ == 0) return 0;
    // In 128 bits: the span of Range(-1, INT64_MAX) and the rounding of Range(0, INT64_MAX, 2)
    // overflow int64. More than INT64_MAX elements (only Range(INT64_MIN, INT64_MAX)) counts as
    // INT64_MAX.
    const Int128 span =
        step_ > 0 ? static_cast<Int128>(stop_) - start_ : static_cast<Int128>(start_) - stop_;
    const Int128 step = step_ > 0 ? static_cast<Int128>(step_) : -static_cast<Int128>(step_);
    if (span <= 0) return 0;
    const Int128 count = (span + step - 1) / step;
    return count > INT64_MAX ? INT64_MAX : static_cast<int64_t>(count);
  }
  ElementSpec ComputeElementSpec() const override { return {{DType::kInt64, {}}}; }
  std::string Describe() const override {
    return absl::StrCat("Range(", start_, ", ", stop_, ", ", step_, ")");
  }

 private:
  class RangeIterator : public IteratorBase {
   public:
    RangeIterator(const RangeDataset* d, const IteratorContext& ctx)
        : IteratorBase(d, ctx, NodeKind::kSource), d_(d), next_(d->start_) {}

   protected:
    absl::StatusOr<std::optional<Element>> GetNextInternal() override {
      if (d_->step_ > 0 ? next_ >= d_->stop_ : next_ <= d_->stop_) return std::nullopt;
      Element e{Tensor::Scalar<int64_t>(next_)};
      // Past the int64 limits is past stop: end there instead of wrapping (undefined).
      if (__builtin_add_overflow(next_, d_->step_, &next_)) next_ = d_->stop_;
      return e;
    }
    absl::Status SaveInternal(proto::IteratorStateProto* state) override {
      (*state->mutable_ints())["next"] = next_;
      return absl::OkStatus();
    }
    absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
      SLUICE_ASSIGN_OR_RETURN(const int64_t next, SavedInt(state, "next"));
      // A value the iterator can hold: start + k * step for k in [0, Cardinality()], or stop
      // (where it ends at the int64 limits). Anything else could mean up to 2^63 elements.
      const Int128 offset = static_cast<Int128>(next) - d_->start_;
      const bool on_grid = offset % d_->step_ == 0 && offset / d_->step_ >= 0 &&
                           offset / d_->step_ <= d_->Cardinality();
      if (!on_grid && next != d_->stop_) {
        return absl::DataLossError(
            absl::StrCat("checkpoint of ", d_->Describe(), " is at ", next, ", not in the range"));
      }
      next_ = next;
      return absl::OkStatus();
    }
    // The element's index k: its value is start + k * step.
    bool DescribeLastInternal(ElementSource* out) override {
      out->push_back(produced() - 1);
      return true;
    }
    absl::StatusOr<Element> RecomputeInternal(SourceCursor& source) override {
      SLUICE_ASSIGN_OR_RETURN(int64_t k, source.NextIn(name(), 0, d_->Cardinality()));
      return Element{Tensor::Scalar<int64_t>(d_->start_ + k * d_->step_)};
    }

   private:
    const RangeDataset* d_;
    int64_t next_;
  };

  int64_t start_, stop_, step_;
};

}  // namespace

Dataset Dataset::Range(int64_t stop) { return Range(0, stop, 1); }

Dataset Dataset::Range(int64_t start, int64_t stop, int64_t step) {
  return Dataset(std::make_shared<RangeDataset>(start, stop, step));
}

}  // namespace sluice
