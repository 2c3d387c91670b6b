#ifndef SLUICE_DATASET_SEQUENTIAL_INTERLEAVE_ITERATOR_H_
#define SLUICE_DATASET_SEQUENTIAL_INTERLEAVE_ITERATOR_H_

#include <memory>

#include "dataset/dataset_base.h"
#include "dataset/interleave.h"

namespace sluice::internal {

// Interleave with num_parallel_calls == 1: the cycle runs in the caller's GetNext.
std::unique_ptr<IteratorBase> MakeSequentialInterleaveIterator(const InterleaveDataset* d,
                                                               const IteratorContext& ctx,
                                                               std::unique_ptr<IteratorBase> input);

}  // namespace sluice::internal

#endif  // SLUICE_DATASET_SEQUENTIAL_INTERLEAVE_ITERATOR_H_
