// FlatMap(fn): for each input element, fn(element) gives a dataset whose
// elements are emitted in turn. Inner iterator i is made with
// ctx.ForInner(name(), i), so each inner pipeline draws its own seeds. Checkpoints
// keep the input element behind the open inner iterator and call fn on it
// again at restore.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/device_elements.h"

namespace sluice {
namespace {

class FlatMapDataset : public DatasetBase {
 public:
  FlatMapDataset(std::shared_ptr<const DatasetBase> input, DatasetFn fn,
                 ElementSpec output_signature)
      : DatasetBase("FlatMap", {std::move(input)}), fn_(std::move(fn)) {
    DeclareOutputSignature(std::move(output_signature));
  }

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  int64_t Cardinality() const override {
    return inputs()[0]->Cardinality() == 0 ? 0 : kUnknownCardinality;
  }

  // The iterator of fn(element), the `index`-th input element, beside the
  // dataset it reads (an iterator does not own its dataset).
  absl::Status MakeInner(const IteratorContext& ctx, Element element, int64_t index,
                         std::shared_ptr<const DatasetBase>* dataset,
                         std::unique_ptr<IteratorBase>* iterator) const {
    SLUICE_ASSIGN_OR_RETURN(Dataset inner, fn_(std::move(element)));
    SLUICE_RETURN_IF_ERROR(CheckInnerPipeline(*this, *inner.base()));
    SLUICE_ASSIGN_OR_RETURN(
        *iterator, inner.base()->MakeIterator(ctx.ForInner(name(), static_cast<uint64_t>(index))));
    *dataset = inner.base();
    return absl::OkStatus();
  }

 private:
  DatasetFn fn_;
};

class FlatMapIterator : public IteratorBase {
 public:
  FlatMapIterator(const FlatMapDataset* d, const IteratorContext& ctx,
                  std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kSync), d_(d), input_(std::move(input)) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    while (true) {
      if (inner_ != nullptr) {
        // Inner errors are named by the inner node and pass through.
        SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, inner_->GetNext());
        if (e) return e;
        CloseInner();
      }
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
      if (!in) return std::nullopt;
      const int64_t index = next_index_++;
      absl::Status made = d_->MakeInner(ctx(), *in, index, &inner_dataset_, &inner_);
      if (!made.ok()) return Annotate(made, index);
      inner_element_ = std::move(*in);
      inner_index_ = index;
    }
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    auto& ints = *state->mutable_ints();
    ints["next_index"] = next_index_;
    ints["inner_index"] = inner_index_;
    if (inner_ != nullptr) {
      proto::ElementProto element;
      ElementToProto(inner_element_, &element);
      (*state->mutable_blobs())["inner_element"] = element.SerializeAsString();
    }
    SLUICE_RETURN_IF_ERROR(SaveInput(input_.get(), state));
    return SaveInput(inner_.get(), state);
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(next_index_, SavedInt(state, "next_index"));
    SLUICE_ASSIGN_OR_RETURN(inner_index_, SavedInt(state, "inner_index"));
    SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* in, InputState(state, 0));
    if (in != nullptr) SLUICE_RETURN_IF_ERROR(input_->Restore(*in));
    SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* inner, InputState(state, 1));
    if (inner == nullptr) return absl::OkStatus();
    auto blob = state.blobs().find("inner_element");
    proto::ElementProto element;
    if (blob == state.blobs().end() || !element.ParseFromString(blob->second)) {
      return absl::DataLossError(
          absl::StrCat("checkpoint of ", state.node(), " lacks the open inner element"));
    }
    // fn is about to see it: it must be one of the input's elements.
    SLUICE_ASSIGN_OR_RETURN(inner_element_,
                            RestoreElement(element, d_->inputs()[0]->element_spec()));
    absl::Status made =
        d_->MakeInner(ctx(), inner_element_, inner_index_, &inner_dataset_, &inner_);
    if (!made.ok()) return Annotate(made, inner_index_);
    return inner_->Restore(*inner);
  }

 private:
  void CloseInner() {
    inner_.reset();  // before its dataset
    inner_dataset_.reset();
    inner_element_.clear();
  }

  const FlatMapDataset* d_;
  std::unique_ptr<IteratorBase> input_;
  std::shared_ptr<const DatasetBase> inner_dataset_;  // declared first: outlives inner_
  std::unique_ptr<IteratorBase> inner_;               // null between inner datasets
  Element inner_element_;                             // the input element behind inner_
  int64_t inner_index_ = -1;
  int64_t next_index_ = 0;  // index of the next input element
};

absl::StatusOr<std::unique_ptr<IteratorBase>> FlatMapDataset::MakeIterator(
    const IteratorContext& ctx) const {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(new FlatMapIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::FlatMap(DatasetFn fn, ElementSpec output_signature) const {
  return Dataset(
      std::make_shared<FlatMapDataset>(base(), std::move(fn), std::move(output_signature)));
}

}  // namespace sluice
