#ifndef SLUICE_DATASET_ITERATOR_H_
#define SLUICE_DATASET_ITERATOR_H_

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/element.h"
#include "dataset/dataset_base.h"
#include "dataset/node_stats.h"

namespace sluice {

// Iterates a pipeline. GetNext is thread-safe; an error is sticky (every
// later call returns it); destroying the iterator cancels its background work
// and joins its threads.
class Iterator {
 public:
  explicit Iterator(std::shared_ptr<const DatasetBase> dataset);
  ~Iterator();
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;

  // The next element; std::nullopt at the end of the sequence.
  absl::StatusOr<std::optional<Element>> GetNext();

  // Makes the pipeline's nodes now (otherwise the first GetNext does) without
  // starting any work: their stats and knobs then exist, so that AUTOTUNE can
  // apply its budgets before the first element. Idempotent.
  absl::Status Initialize();

  // The iterator's position as a serialized IteratorCheckpoint protobuf.
  absl::StatusOr<std::string> Save();
  // Resumes from Save()'s output. Must be called before the first GetNext;
  // the pipeline must be the same one.
  absl::Status Restore(const std::string& checkpoint);

  // Per-node counters, inputs first.
  std::vector<NodeStatsSnapshot> Stats() const;
  const std::shared_ptr<StatsRegistry>& stats_registry() const { return ctx_.stats; }
  const IteratorContext& context() const { return ctx_; }

 private:
  absl::Status EnsureStarted();

  std::shared_ptr<const DatasetBase> dataset_;
  IteratorContext ctx_;
  std::mutex mu_;
  std::unique_ptr<IteratorBase> root_;
  bool started_ = false;
  absl::Status error_;  // sticky
};

}  // namespace sluice

#endif  // SLUICE_DATASET_ITERATOR_H_
