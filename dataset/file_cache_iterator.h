#ifndef SLUICE_DATASET_FILE_CACHE_ITERATOR_H_
#define SLUICE_DATASET_FILE_CACHE_ITERATOR_H_

#include <memory>

#include "absl/status/statusor.h"
#include "dataset/cache.h"
#include "dataset/dataset_base.h"

namespace sluice::internal {

// Reads the dataset's cache file when a valid one exists for this pipeline, else writes it while
// reading the input.
absl::StatusOr<std::unique_ptr<IteratorBase>> MakeFileCacheIterator(const CacheDataset* d,
                                                                    const IteratorContext& ctx);

}  // namespace sluice::internal

#endif  // SLUICE_DATASET_FILE_CACHE_ITERATOR_H_
