// FromTensorSlices(element): one element per row of the components' first
// dimension, like tf.data.Dataset.from_tensor_slices. Each output component
// is a zero-copy SubTensor view of the input's buffer.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class FromTensorSlicesDataset : public DatasetBase {
 public:
  explicit FromTensorSlicesDataset(Element element)
      : DatasetBase("FromTensorSlices", {}), element_(std::move(element)) {
    // The fluent API cannot fail here; a bad element is reported when an
    // iterator is made (that is, by the first GetNext).
    if (element_.empty()) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat(name(), ": the element has no components to slice"));
      return;
    }
    for (size_t i = 0; i < element_.size(); ++i) {
      const Tensor& t = element_[i];
      if (t.rank() == 0) {
        status_ = absl::InvalidArgumentError(absl::StrCat(
            name(), ": component ", i, " is a scalar (", DTypeName(t.dtype()),
            t.shape().DebugString(), "); every component needs a first dimension to slice"));
        return;
      }
      if (t.dim(0) != element_[0].dim(0)) {
        status_ = absl::InvalidArgumentError(
            absl::StrCat(name(), ": component ", i, " has shape ", t.shape().DebugString(), " (",
                         t.dim(0), " rows), expected ", element_[0].dim(0),
                         " rows like component 0 (shape ", element_[0].shape().DebugString(), ")"));
        return;
      }
    }
    rows_ = element_[0].dim(0);
  }

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override {
    SLUICE_RETURN_IF_ERROR(status_);
    return std::unique_ptr<IteratorBase>(new SliceIterator(this, ctx));
  }
  int64_t Cardinality() const override { return status_.ok() ? rows_ : kUnknownCardinality; }
  // Each component's row: its shape without the first dimension (none when the element cannot
  // be sliced: then there is nothing to describe).
  ElementSpec ComputeElementSpec() const override {
    return status_.ok() ? ElementSpec::FromElement(element_).Unbatched() : ElementSpec();
  }
  std::string Describe() const override {
    return absl::StrCat("FromTensorSlices(", rows_, " rows, ", element_.size(), " components)");
  }

 private:
  class SliceIterator : public IteratorBase {
   public:
    SliceIterator(const FromTensorSlicesDataset* d, const IteratorContext& ctx)
        : IteratorBase(d, ctx, NodeKind::kSource), d_(d) {}

   protected:
    absl::StatusOr<std::optional<Element>> GetNextInternal() override {
      if (next_ >= d_->rows_) return std::nullopt;
      SLUICE_ASSIGN_OR_RETURN(Element out, Row(next_));
      ++next_;
      return out;
    }
    bool DescribeLastInternal(ElementSource* out) override {
      out->push_back(next_ - 1);
      return true;
    }
    absl::StatusOr<Element> RecomputeInternal(SourceCursor& source) override {
      SLUICE_ASSIGN_OR_RETURN(int64_t row, source.NextIn(name(), 0, d_->rows_));
      return Row(row);
    }
    absl::Status SaveInternal(proto::IteratorStateProto* state) override {
      (*state->mutable_ints())["next"] = next_;
      return absl::OkStatus();
    }
    absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
      SLUICE_ASSIGN_OR_RETURN(next_, SavedInt(state, "next"));
      if (next_ < 0 || next_ > d_->rows_) {
        return absl::DataLossError(absl::StrCat("checkpoint of ", d_->name(), " is at row ", next_,
                                                ", but the dataset has ", d_->rows_, " rows"));
      }
      return absl::OkStatus();
    }

   private:
    absl::StatusOr<Element> Row(int64_t i) const {
      Element out;
      out.reserve(d_->element_.size());
      for (const Tensor& t : d_->element_) {
        SLUICE_ASSIGN_OR_RETURN(Tensor row, t.SubTensor(i));
        out.push_back(std::move(row));
      }
      return out;
    }

    const FromTensorSlicesDataset* d_;
    int64_t next_ = 0;
  };

  Element element_;
  absl::Status status_;
  int64_t rows_ = 0;
};

}  // namespace

Dataset Dataset::FromTensorSlices(Element element) {
  return Dataset(std::make_shared<FromTensorSlicesDataset>(std::move(element)));
}

}  // namespace sluice
