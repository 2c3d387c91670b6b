#ifndef SLUICE_DATASET_CACHE_H_
#define SLUICE_DATASET_CACHE_H_

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

// Cache(path): the first complete pass over the input is recorded; later iterators replay the
// recording without touching the input.
//
// In memory (empty path, memory_cache_iterator.cc) or in a file (file_cache_iterator.cc), as
// tf.data splits its memory and file caches; each file says how its cache works and what its
// checkpoints hold.
namespace sluice::internal {

class CacheDataset : public DatasetBase {
 public:
  using Recording = std::vector<Element>;

  CacheDataset(std::shared_ptr<const DatasetBase> input, std::string path)
      : DatasetBase("Cache", {std::move(input)}), path_(std::move(path)) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  ElementSpec ComputeElementSpec() const override { return inputs()[0]->element_spec(); }
  int64_t Cardinality() const override { return inputs()[0]->Cardinality(); }
  std::string Describe() const override {
    return path_.empty() ? "Cache" : absl::StrCat("Cache(", path_, ")");
  }

  const std::string& path() const { return path_; }

  // File mode: passes in a row whose replay of the file failed on a read (an I/O error, not
  // corruption). The first keeps the file (the error may pass); the second removes it.
  int NoteFileReadFailure() const { return file_read_failures_.fetch_add(1) + 1; }
  void ClearFileReadFailures() const { file_read_failures_.store(0); }

  // Memory mode: the completed recording, or null.
  std::shared_ptr<const Recording> completed() const {
    MutexLock l(&mu_);
    return completed_;
  }
  // The first completed recording wins; later ones (concurrent passes) are dropped.
  void Complete(std::shared_ptr<const Recording> recording) const {
    MutexLock l(&mu_);
    if (completed_ == nullptr) completed_ = std::move(recording);
  }

 private:
  std::string path_;
  mutable std::atomic<int> file_read_failures_{0};
  // The dataset is immutable and shared, but its cache fills in once: the one mutable part.
  mutable Mutex mu_;
  mutable std::shared_ptr<const Recording> completed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::internal

#endif  // SLUICE_DATASET_CACHE_H_
