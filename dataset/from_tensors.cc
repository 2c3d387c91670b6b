// FromTensors(element): a dataset of exactly one element, like
// tf.data.Dataset.from_tensors.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class FromTensorsDataset : public DatasetBase {
 public:
  explicit FromTensorsDataset(Element element)
      : DatasetBase("FromTensors", {}), element_(std::move(element)) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override {
    return std::unique_ptr<IteratorBase>(new FromTensorsIterator(this, ctx));
  }
  int64_t Cardinality() const override { return 1; }
  ElementSpec ComputeElementSpec() const override { return ElementSpec::FromElement(element_); }
  std::string Describe() const override {
    return absl::StrCat("FromTensors(", element_.size(), " components)");
  }

 private:
  class FromTensorsIterator : public IteratorBase {
   public:
    FromTensorsIterator(const FromTensorsDataset* d, const IteratorContext& ctx)
        : IteratorBase(d, ctx, NodeKind::kSource), d_(d) {}

   protected:
    absl::StatusOr<std::optional<Element>> GetNextInternal() override {
      if (done_) return std::nullopt;
      done_ = true;
      return d_->element_;  // Copies the views, not the data.
    }
    absl::Status SaveInternal(proto::IteratorStateProto* state) override {
      (*state->mutable_ints())["done"] = done_;
      return absl::OkStatus();
    }
    absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
      SLUICE_ASSIGN_OR_RETURN(int64_t done, SavedInt(state, "done"));
      done_ = done != 0;
      return absl::OkStatus();
    }

   private:
    const FromTensorsDataset* d_;
    bool done_ = false;
  };

  Element element_;
};

}  // namespace

Dataset Dataset::FromTensors(Element element) {
  return Dataset(std::make_shared<FromTensorsDataset>(std::move(element)));
}

}  // namespace sluice
