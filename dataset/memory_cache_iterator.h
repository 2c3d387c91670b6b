#ifndef SLUICE_DATASET_MEMORY_CACHE_ITERATOR_H_
#define SLUICE_DATASET_MEMORY_CACHE_ITERATOR_H_

#include <memory>

#include "dataset/cache.h"
#include "dataset/dataset_base.h"

namespace sluice::internal {

// Replays `done` when the dataset's recording is complete, else records what it reads from
// `input`.
std::unique_ptr<IteratorBase> MakeMemoryCacheIterator(
    const CacheDataset* d, const IteratorContext& ctx,
    std::shared_ptr<const CacheDataset::Recording> done, std::unique_ptr<IteratorBase> input);

}  // namespace sluice::internal

#endif  // SLUICE_DATASET_MEMORY_CACHE_ITERATOR_H_
