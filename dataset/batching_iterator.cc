#include "dataset/batching_iterator.h"

#include <algorithm>
#include <utility>

#include "absl/cleanup/cleanup.h"
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
  // The batch's source: its row count, then each row's.
  last_source_.assign(1, 0);
  bool described = SavesSources();
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
    described = described && input_->DescribeLast(&last_source_);
  }
  if (!described) last_source_.clear();
  const int64_t n = static_cast<int64_t>(rows_.size());
  if (n == 0 || (n < batch_size_ && drop_remainder_)) {
    rows_.clear();
    return std::nullopt;
  }
  if (!last_source_.empty()) last_source_[0] = n;
  // The rows go whatever MakeBatch does, a bad_alloc (turned into a status by GetNext) included:
  // kept, a next call under IgnoreErrors would retry the same batch without end.
  absl::Cleanup clear_rows = [this] { rows_.clear(); };
  absl::StatusOr<Element> batch = MakeBatch();
  if (!batch.ok()) return batch.status();
  return std::optional<Element>(std::move(*batch));
}

bool BatchingIterator::DescribeLastInternal(ElementSource* out) {
  return AppendSource(last_source_, out);
}

absl::StatusOr<Element> BatchingIterator::RecomputeInternal(SourceCursor& source) {
  // [1, batch_size]; batch_size + 1 would overflow for a batch of INT64_MAX.
  SLUICE_ASSIGN_OR_RETURN(int64_t n,
                          source.NextIn(name(), 1, std::min(batch_size_, INT64_MAX - 1) + 1));
  rows_.clear();
  for (int64_t i = 0; i < n; ++i) {
    absl::StatusOr<Element> row = input_->Recompute(source);
    if (!row.ok()) {
      rows_.clear();
      return row.status();
    }
    rows_.push_back(*std::move(row));
  }
  absl::Cleanup clear_rows = [this] { rows_.clear(); };
  return MakeBatch();
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
