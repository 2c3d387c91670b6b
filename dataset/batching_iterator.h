#ifndef SLUICE_DATASET_BATCHING_ITERATOR_H_
#define SLUICE_DATASET_BATCHING_ITERATOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataset/dataset_base.h"

namespace sluice {

// What Batch and PaddedBatch share: gather up to `batch_size` input elements, end
// (or drop a short last batch when `drop_remainder`) as tf.data does, and save
// only whether the input ended; the subclass turns the rows into one element.
class BatchingIterator : public IteratorBase {
 public:
  BatchingIterator(const DatasetBase* dataset, const IteratorContext& ctx,
                   std::unique_ptr<IteratorBase> input, int64_t batch_size, bool drop_remainder);

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() final;
  absl::Status SaveInternal(proto::IteratorStateProto* state) final;
  absl::Status RestoreInternal(const proto::IteratorStateProto& state) final;
  bool DescribeLastInternal(ElementSource* out) final;
  absl::StatusOr<Element> RecomputeInternal(SourceCursor& source) final;

  // One batch of `rows_` (at least one row). May move `rows_` away; it is
  // cleared after the call either way.
  virtual absl::StatusOr<Element> MakeBatch() = 0;

  std::vector<Element> rows_;  // kept between batches to reuse its capacity

 private:
  std::unique_ptr<IteratorBase> input_;
  const int64_t batch_size_;
  const bool drop_remainder_;
  bool ended_ = false;
  ElementSource last_source_;  // of the last batch; empty when its rows had none
};

}  // namespace sluice

#endif  // SLUICE_DATASET_BATCHING_ITERATOR_H_
