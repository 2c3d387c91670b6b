#ifndef SLUICE_TRAIN_BACKEND_TRACE_HOOKS_H_
#define SLUICE_TRAIN_BACKEND_TRACE_HOOKS_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::backend {

class Backend;

// What code above the backend needs to know about a traced step (train/function/): the step runs
// once through a recorder, and later calls replay only its kernels. Host code in the step runs
// once, so a host value a kernel takes that changes from call to call (Dropout's seed, counted on
// the host) must be handed to the recorder as a function it calls again at every replay.

// True while the kernels this thread runs are recorded for replay.
bool Tracing();

// The source of the seed of the next Dropout kernel recorded on this thread: called once per
// replay, in the order of the recorded kernels, as the eager code would have computed it. Does
// nothing when not tracing. The recorder refuses a Dropout without one: its replays would repeat
// one mask.
using SeedSource = std::function<absl::StatusOr<uint64_t>()>;
void SetNextDropoutSeedSource(SeedSource source);

// A check that reads a tensor the step computed back on the host (check numerics): it reaches the
// device through BackendFor() and returns an error to stop the step.
using TensorCheck = std::function<absl::Status(const Tensor&)>;
// Runs `check` on `t` now. While this thread traces, the recorder also keeps it, named `name`, to
// run again at every replay right after the kernels that wrote `t`, so that a compiled step checks
// what an eager one does; `check` then runs with tracing off (its own reads are not recorded).
absl::Status CheckAtEveryReplay(const char* name, const Tensor& t, TensorCheck check);

// Host bookkeeping of a traced step that must happen at every call: a metric's count of what it
// has seen (a host number, from shapes). Runs `fn` now; while this thread traces, the recorder
// also keeps it to run after each replay's kernels have been queued (it reads no tensor).
void AtEveryCall(std::function<void()> fn);

// What a tracing backend does with CheckAtEveryReplay and AtEveryCall: run them and record them.
class CheckRecorder {
 public:
  virtual ~CheckRecorder() = default;
  virtual absl::Status RecordCheck(const char* name, const Tensor& t, TensorCheck check) = 0;
  virtual void RecordAtEveryCall(std::function<void()> fn) = 0;
};

// Makes BackendFor() return `backend` for its device on this thread while the scope lives, and
// marks the thread as tracing (not when `backend` is null: a scope of null suspends tracing). The
// recorder of train/function/ installs itself so, as the backend and as the `checks` recorder.
// Scopes nest.
class ScopedTracingBackend {
 public:
  explicit ScopedTracingBackend(Backend* backend, CheckRecorder* checks = nullptr);
  ~ScopedTracingBackend();
  ScopedTracingBackend(const ScopedTracingBackend&) = delete;
  ScopedTracingBackend& operator=(const ScopedTracingBackend&) = delete;

 private:
  Backend* previous_;
  CheckRecorder* previous_checks_;
  SeedSource previous_seed_;
};

namespace internal {
// The backend installed by ScopedTracingBackend on this thread, or null.
Backend* TracingBackend();
// Takes (and clears) the source set by SetNextDropoutSeedSource; empty when none was set.
SeedSource TakeNextDropoutSeedSource();
}  // namespace internal

}  // namespace sluice::train::backend

#endif  // SLUICE_TRAIN_BACKEND_TRACE_HOOKS_H_
