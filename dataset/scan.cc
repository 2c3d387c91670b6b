// Scan(initial_state, fn), as tf.data.Dataset.scan: output k is the second half of
// fn(state_k, element_k), and state_{k+1} its first half. An error from fn takes the element's
// place and leaves the state as it was (so IgnoreErrors after Scan skips the element); an input
// error passes through. A new state of other components or dtypes than the state is such an error.
// A checkpoint holds the state with the input's position.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class ScanDataset : public DatasetBase {
 public:
  ScanDataset(std::shared_ptr<const DatasetBase> input, Element initial_state, ScanFn fn,
              ElementSpec output_signature)
      : DatasetBase("Scan", {std::move(input)}),
        initial_state_(std::move(initial_state)),
        fn_(std::move(fn)) {
    DeclareOutputSignature(std::move(output_signature));
  }

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override {
    if (!fn_) return absl::InvalidArgumentError(absl::StrCat(name(), ": no function"));
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
    return std::unique_ptr<IteratorBase>(new ScanIterator(this, ctx, std::move(input)));
  }
  int64_t Cardinality() const override { return inputs()[0]->Cardinality(); }
  std::string Describe() const override {
    return absl::StrCat("Scan(state=", ElementDebugString(initial_state_, 4), ")");
  }

 private:
  class ScanIterator : public IteratorBase {
   public:
    ScanIterator(const ScanDataset* d, const IteratorContext& ctx,
                 std::unique_ptr<IteratorBase> input)
        : IteratorBase(d, ctx, NodeKind::kSync),
          fn_(d->fn_),
          input_(std::move(input)),
          state_(d->initial_state_) {}

   protected:
    absl::StatusOr<std::optional<Element>> GetNextInternal() override {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
      if (!in) return std::nullopt;
      SLUICE_ASSIGN_OR_RETURN(auto next, fn_(state_, std::move(*in)));
      SLUICE_RETURN_IF_ERROR(CheckState(next.first));
      state_ = std::move(next.first);
      return std::move(next.second);
    }
    absl::Status SaveInternal(proto::IteratorStateProto* state) override {
      ResultToProto(std::optional<Element>(state_), state->add_buffer());
      return SaveInput(input_.get(), state);
    }
    absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
      if (state.buffer_size() != 1) {
        return absl::DataLossError(
            absl::StrCat("checkpoint of ", state.node(), " lacks the scan state"));
      }
      SLUICE_ASSIGN_OR_RETURN(auto saved, ResultFromProto(state.buffer(0)));
      if (!saved.ok() || !saved->has_value()) {
        return absl::DataLossError(
            absl::StrCat("checkpoint of ", state.node(), " holds no scan state"));
      }
      state_ = std::move(**saved);
      return RestoreInput(input_.get(), state);
    }

   private:
    // As tf.data's: the state keeps its components and their dtypes (its shapes may change). A
    // state that turned from int64 into float32 would otherwise go on silently.
    absl::Status CheckState(const Element& next) const {
      bool same = next.size() == state_.size();
      for (size_t i = 0; same && i < next.size(); ++i) same = next[i].dtype() == state_[i].dtype();
      if (same) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(
          "scan function returned a new state of ", ElementSpec::FromElement(next).DebugString(),
          " for a state of ", ElementSpec::FromElement(state_).DebugString(),
          ": the state keeps its components and their dtypes (its shapes may change)"));
    }

    const ScanFn& fn_;
    std::unique_ptr<IteratorBase> input_;
    Element state_;
  };

  Element initial_state_;
  ScanFn fn_;
};

}  // namespace

Dataset Dataset::Scan(Element initial_state, ScanFn fn, ElementSpec output_signature) const {
  return Dataset(std::make_shared<ScanDataset>(base(), std::move(initial_state), std::move(fn),
                                               std::move(output_signature)));
}

}  // namespace sluice
