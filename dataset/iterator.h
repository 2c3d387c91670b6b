#ifndef SLUICE_DATASET_ITERATOR_H_
#define SLUICE_DATASET_ITERATOR_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/element.h"
#include "core/mutex.h"
#include "dataset/dataset_base.h"
#include "dataset/node_stats.h"

namespace sluice {

class Iterator;
struct AutotuneReport;  // autotune/controller.h

// Something an Iterator runs beside its pipeline and owns: AUTOTUNE. It lives
// in autotune/, which depends on dataset/, so the iterator only knows this
// interface and makes it through the factory that autotune/ registers.
class IteratorTuner {
 public:
  virtual ~IteratorTuner() = default;
};

// Makes the tuner of `iterator`, whose nodes exist but have not started any
// work. Called under the iterator's lock: it must not call the iterator's
// GetNext, Initialize, Save or Restore.
using IteratorTunerFactory = std::unique_ptr<IteratorTuner> (*)(const Iterator& iterator);

// Installs the factory that iterators made from now on use (nullptr: none).
// autotune/controller.h installs AUTOTUNE's in every program that includes it
// (sluice.h does), through an inline variable: a registration from a static
// initializer alone would be dropped with its object file when a program
// links the static library without referring to it.
void SetIteratorTunerFactory(IteratorTunerFactory factory);
IteratorTunerFactory GetIteratorTunerFactory();

// Iterates a pipeline. GetNext is thread-safe; an error is sticky (every
// later call returns it); destroying the iterator cancels its background work
// and joins its threads.
//
// When the pipeline has a kAutotune knob and Options::autotune is not false,
// the iterator starts AUTOTUNE as soon as its nodes are made (before any of
// them works) and stops it first thing in its destructor.
class Iterator {
 public:
  explicit Iterator(std::shared_ptr<const DatasetBase> dataset);
  ~Iterator();
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;

  // The next element; std::nullopt at the end of the sequence.
  absl::StatusOr<std::optional<Element>> GetNext();
  // Waits, up to `deadline`, until GetNext would return without waiting for the pipeline's
  // threads: the last node (a Prefetch, under any WithOptions) has an element, error or end
  // buffered, or the iterator holds its sticky error. kUnknown before the first GetNext, and where
  // no such node ends the pipeline. Python's next() waits so, waking for signals, and then calls
  // GetNext on its own thread, instead of handing each call to a thread it can leave.
  NextReadiness WaitForNext(std::chrono::steady_clock::time_point deadline);

  // Cancels the pipeline's work from any thread: a GetNext blocked on it (and every later one)
  // returns Cancelled, as in the destructor, which remains the only thing left to call. Lets an
  // owner whose own thread waits in GetNext stop that wait before joining it.
  void Cancel();

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

  // What AUTOTUNE chose and why, while it runs for this iterator;
  // FailedPrecondition when it does not (disabled in Options, no kAutotune
  // knob, nodes not made yet, or autotune/ not linked in). Defined in the
  // autotune library, which the complete AutotuneReport type comes from.
  absl::StatusOr<sluice::AutotuneReport> AutotuneReport() const;
  // The running tuner, or nullptr. Safe from any thread.
  IteratorTuner* tuner() const { return tuner_view_.load(std::memory_order_acquire); }

 private:
  absl::Status EnsureStarted() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::shared_ptr<const DatasetBase> dataset_;
  IteratorContext ctx_;
  Mutex mu_;
  std::unique_ptr<IteratorBase> root_ ABSL_GUARDED_BY(mu_);
  // Set once, when the nodes are made.
  std::unique_ptr<IteratorTuner> tuner_ ABSL_GUARDED_BY(mu_);
  // tuner_.get(), published for readers that do not take mu_ (GetNext holds
  // it while it waits for an element).
  std::atomic<IteratorTuner*> tuner_view_{nullptr};
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);  // sticky
  int counter_source_ = -1;                  // the profiler's counters of this pipeline
};

}  // namespace sluice

#endif  // SLUICE_DATASET_ITERATOR_H_
