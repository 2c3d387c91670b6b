#include "dataset/cache.h"

#include <memory>
#include <string>
#include <utility>

#include "core/status_macros.h"
#include "dataset/file_cache_iterator.h"
#include "dataset/memory_cache_iterator.h"

namespace sluice {
namespace internal {

absl::StatusOr<std::unique_ptr<IteratorBase>> CacheDataset::MakeIterator(
    const IteratorContext& ctx) const {
  if (!path_.empty()) return MakeFileCacheIterator(this, ctx);
  std::shared_ptr<const Recording> done = completed();
  std::unique_ptr<IteratorBase> input;
  if (done == nullptr) {
    SLUICE_ASSIGN_OR_RETURN(input, inputs()[0]->MakeIterator(ctx));
  }
  return MakeMemoryCacheIterator(this, ctx, std::move(done), std::move(input));
}

}  // namespace internal

Dataset Dataset::Cache(std::string path) const {
  return Dataset(std::make_shared<internal::CacheDataset>(base(), std::move(path)));
}

}  // namespace sluice
