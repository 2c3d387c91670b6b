#include "dataset/batching_iterator.h"

#include <algorithm>
#include <utility>

#include "core/status_macros.h"

namespace sluice {

BatchingIterator::BatchingIterator(const DatasetBase* dataset, const IteratorContext& ctx,
                                   std::unique_ptr<IteratorBase> input, int64_t batch_size,
                                   bool drop_remainder)
    : IteratorBase(dataset, ctx, NodeKind::kSync),
      input_(std::move(input)),
      batch_size_(batch_size),
      drop_remainder_(drop_remainder) {}

absl::StatusOr<std::optional<Element>> BatchingIterator::GetNextInternal() {
  if (ended_) return std::nullopt;
  // A huge batch_size (to batch everything) must not reserve that much.
  rows_.reserve(static_cast<size_t>(std::min<int64_t>(batch_size_, 1024)));
  while (static_cast<int64_t>(rows_.size()) < batch_size_) {
    absl::StatusOr<std::optional<Element>> e = input_->GetNext();
    if (!e.ok()) {
      rows_.clear();  // The partial batch goes with the error.
      return e.status();
    }
    if (!e->has_value()) {
      ended_ = true;
      break;
    }
    rows_.push_back(std::move(**e));
  }
  const int64_t n = static_cast<int64_t>(rows_.size());
  if (n == 0 || (n < batch_size_ && drop_remainder_)) {
    rows_.clear();
    return std::nullopt;
  }
  absl::StatusOr<Element> batch = MakeBatch();
  rows_.clear();
  if (!batch.ok()) return batch.status();
  return std::optional<Element>(std::move(*batch));
}

absl::Status BatchingIterator::SaveInternal(proto::IteratorStateProto* state) {
  (*state->mutable_ints())["ended"] = ended_;
  return SaveInput(input_.get(), state);
}

absl::Status BatchingIterator::RestoreInternal(const proto::IteratorStateProto& state) {
  SLUICE_ASSIGN_OR_RETURN(int64_t ended, SavedInt(state, "ended"));
  ended_ = ended != 0;
  return RestoreInput(input_.get(), state);
}

}  // namespace sluice
