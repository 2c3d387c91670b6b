#ifndef SLUICE_DATASET_PARALLEL_INTERLEAVE_ITERATOR_H_
#define SLUICE_DATASET_PARALLEL_INTERLEAVE_ITERATOR_H_

#include <memory>

#include "dataset/dataset_base.h"
#include "dataset/interleave.h"

namespace sluice::internal {

// Interleave with num_parallel_calls > 1 or kAutotune: worker threads open and read the inner
// pipelines ahead of the consumer (see interleave.h).
std::unique_ptr<IteratorBase> MakeParallelInterleaveIterator(const InterleaveDataset* d,
                                                             const IteratorContext& ctx,
                                                             std::unique_ptr<IteratorBase> input);

}  // namespace sluice::internal

#endif  // SLUICE_DATASET_PARALLEL_INTERLEAVE_ITERATOR_H_
