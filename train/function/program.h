#ifndef SLUICE_TRAIN_FUNCTION_PROGRAM_H_
#define SLUICE_TRAIN_FUNCTION_PROGRAM_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "train/backend/backend.h"
#include "train/function/recording_backend.h"

namespace sluice::train::function {

// Where Plan() put one slot: at `offset` in the arena, or kept in its own block.
struct SlotPlacement {
  size_t offset = 0;
  size_t bytes = 0;
  int first = -1, last = -1;
  size_t alignment = 256;  // of the offset and the size taken
};

// Byte offsets for blocks live over [first, last] (call indices, inclusive), each `bytes` long,
// so that two blocks whose lives overlap never overlap in memory: first fit, in three orders (the
// largest first, as TFLite's arena planner; the longest-lived first; by first use), keeping the
// smallest arena. Each offset is a multiple of its slot's alignment. Returns the arena's size.
size_t PlaceSlots(std::vector<SlotPlacement>& slots);

// A traced step's kernels with their memory planned: the arguments of every call bound once to
// the arena (the step's intermediates, placed by their lifetimes), to the blocks that outlived
// the trace (its outputs, kept where they are so that their holders see each replay's values),
// and to the external tensors (variables, input buffers, constants). A replay calls the kernels
// in order and does nothing else: no tape, no allocation but what a kernel returns itself (a
// pooling workspace), no shape inference.
class Program {
 public:
  // Plans the calls `recorder` recorded. `outputs` (the traced function's results) go into the
  // arena too, alive to the end of the program, and are replaced by their views there, which
  // every replay writes. Any other block still alive now escaped (a layer holds it): it stays
  // where it is. Call this after everything else the function made is gone.
  //
  // With `device_graphs` on a backend that captures them (CUDA), the first replay captures each
  // run of calls without host work (RecordedCall::host_work) into a device graph, and later
  // replays launch the graphs, running only the host-work calls one by one between them (as
  // PyTorch's make_graphed_callables; the graphs' kernels keep the arena's addresses). Where a
  // capture fails, that run and the runs not yet captured replay call by call from then on, and
  // capture_error() says why. What backend::AtEveryCall recorded runs after a replay's calls.
  static absl::StatusOr<std::unique_ptr<Program>> Plan(RecordingBackend& recorder,
                                                       std::vector<Tensor>& outputs,
                                                       bool device_graphs = true);

  absl::Status Replay();

  size_t arena_bytes() const { return arena_bytes_; }
  // The bytes of the blocks that escaped the trace (held outside it, not outputs), kept out of
  // the arena.
  size_t pinned_bytes() const { return pinned_bytes_; }
  size_t kernels() const { return calls_.size(); }
  // The device graphs captured so far.
  int device_graphs() const;
  // Why a capture failed (OK when none did).
  const absl::Status& capture_error() const { return capture_error_; }

 private:
  explicit Program(backend::Backend& backend) : backend_(backend) {}

  struct BoundCall {
    RecordedCall call;
    std::vector<Tensor> tensors;
    std::vector<std::pair<size_t, int>> produced_args;  // (argument, slot) filled at replay
  };
  // Calls [begin, end): captured into `graph` at the first replay when `capture`, else run one
  // by one.
  struct Segment {
    size_t begin = 0, end = 0;
    bool capture = false;
    std::unique_ptr<backend::DeviceGraph> graph;
  };

  // Runs calls [begin, end) one by one; `spans` names each in the profile.
  absl::Status RunCalls(size_t begin, size_t end, bool spans);
  // Captures `segment` into a graph and launches it; on a capture error, runs its calls instead
  // and never tries again.
  absl::Status CaptureAndLaunch(Segment& segment);

  backend::Backend& backend_;
  std::vector<BoundCall> calls_;
  std::vector<Segment> segments_;
  // backend::AtEveryCall's host bookkeeping, run after each replay's calls.
  std::vector<std::function<void()>> at_every_call_;
  std::vector<Tensor> produced_;  // by slot: the workspaces of this replay
  // Slots whose workspace a graph's kernel wrote: kept for the graph's life, since launches do not
  // run the producing call on the host again.
  std::vector<char> produced_by_graph_;
  absl::Status capture_error_;
  Tensor arena_;
  size_t arena_bytes_ = 0;
  size_t pinned_bytes_ = 0;
};

}  // namespace sluice::train::function

#endif  // SLUICE_TRAIN_FUNCTION_PROGRAM_H_
