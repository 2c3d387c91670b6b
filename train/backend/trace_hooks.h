#ifndef SLUICE_TRAIN_BACKEND_TRACE_HOOKS_H_
#define SLUICE_TRAIN_BACKEND_TRACE_HOOKS_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"

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

// Makes BackendFor() return `backend` for its device on this thread while the scope lives, and
// marks the thread as tracing: the recorder of train/function/ installs itself so. Scopes nest.
class ScopedTracingBackend {
 public:
  explicit ScopedTracingBackend(Backend* backend);
  ~ScopedTracingBackend();
  ScopedTracingBackend(const ScopedTracingBackend&) = delete;
  ScopedTracingBackend& operator=(const ScopedTracingBackend&) = delete;

 private:
  Backend* previous_;
};

namespace internal {
// The backend installed by ScopedTracingBackend on this thread, or null.
Backend* TracingBackend();
// Takes (and clears) the source set by SetNextDropoutSeedSource; empty when none was set.
SeedSource TakeNextDropoutSeedSource();
}  // namespace internal

}  // namespace sluice::train::backend

#endif  // SLUICE_TRAIN_BACKEND_TRACE_HOOKS_H_
