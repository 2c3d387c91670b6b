#include "dataset/counted_input_iterator.h"

#include <utility>

#include "core/status_macros.h"

namespace sluice {

CountedInputIterator::CountedInputIterator(const DatasetBase* dataset, const IteratorContext& ctx,
                                           std::unique_ptr<IteratorBase> input, int64_t count,
                                           std::string counter_key)
    : IteratorBase(dataset, ctx, NodeKind::kSync),
      count_(count),
      input_(std::move(input)),
      counter_key_(std::move(counter_key)) {}

absl::Status CountedInputIterator::SaveInternal(proto::IteratorStateProto* state) {
  auto& ints = *state->mutable_ints();
  ints[counter_key_] = counted_;
  ints["ended"] = ended_;
  return SaveInput(input_.get(), state);
}

absl::Status CountedInputIterator::RestoreInternal(const proto::IteratorStateProto& state) {
  SLUICE_ASSIGN_OR_RETURN(counted_, SavedInt(state, counter_key_));
  SLUICE_ASSIGN_OR_RETURN(int64_t ended, SavedInt(state, "ended"));
  ended_ = ended != 0;
  return RestoreInput(input_.get(), state);
}

}  // namespace sluice
