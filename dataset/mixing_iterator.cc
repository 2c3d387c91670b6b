#include "dataset/mixing_iterator.h"

#include "core/status_macros.h"

namespace sluice {

ElementSpec MixedElementSpec(const std::vector<std::shared_ptr<const DatasetBase>>& inputs,
                             size_t count) {
  if (count == 0) return ElementSpec();
  ElementSpec spec = inputs[0]->element_spec();
  for (size_t i = 1; i < count; ++i) {
    spec = spec.MostSpecificCompatibleSpec(inputs[i]->element_spec());
  }
  return spec;
}

MixingIterator::MixingIterator(const DatasetBase* dataset, const IteratorContext& ctx,
                               std::vector<std::unique_ptr<IteratorBase>> inputs)
    : IteratorBase(dataset, ctx, NodeKind::kSync), inputs_(std::move(inputs)) {}

size_t MixingIterator::num_live() const {
  size_t n = 0;
  for (const auto& in : inputs_) n += in != nullptr;
  return n;
}

absl::StatusOr<std::optional<Element>> MixingIterator::NextOf(size_t i) {
  absl::StatusOr<std::optional<Element>> e = inputs_[i]->GetNext();
  if (IsEndOfSequence(e)) inputs_[i].reset();
  return e;
}

absl::Status MixingIterator::SaveInputs(proto::IteratorStateProto* state) {
  for (auto& in : inputs_) SLUICE_RETURN_IF_ERROR(SaveInput(in.get(), state));
  return absl::OkStatus();
}

absl::Status MixingIterator::RestoreInputs(const proto::IteratorStateProto& state) {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* in,
                            InputState(state, static_cast<int>(i)));
    if (in == nullptr) {
      inputs_[i].reset();  // it had ended
    } else {
      SLUICE_RETURN_IF_ERROR(inputs_[i]->Restore(*in));
    }
  }
  return absl::OkStatus();
}

}  // namespace sluice
