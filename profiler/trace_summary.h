#ifndef SLUICE_PROFILER_TRACE_SUMMARY_H_
#define SLUICE_PROFILER_TRACE_SUMMARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/trace_event.h"

namespace sluice::profiler {

// What a profile's summary reports, computed from its spans.
struct TraceStats {
  struct Op {
    std::string category, name;
    std::string track;  // a device track's name (its ops are kept apart); empty on the host
    int64_t count = 0;
    int64_t total_ns = 0;  // inclusive
    int64_t self_ns = 0;   // without the spans nested in it on the same thread
  };
  std::vector<Op> ops;  // every (category, name), by total time, longest first
  // Training steps: category "step", name "step"; their phases: category "phase", names
  // "input", "forward", "loss", "backward" (an eager step), "forward_backward" (a compiled step's
  // replay), "optimizer", "metrics", "device_wait" (the host waiting for the device to finish an
  // earlier step, so as to run at most a few steps ahead); "other" is the rest of the steps' time.
  int64_t steps = 0;
  int64_t step_ns = 0;
  int64_t input_ns = 0, forward_ns = 0, loss_ns = 0, backward_ns = 0, forward_backward_ns = 0,
          optimizer_ns = 0, metrics_ns = 0, device_wait_ns = 0, other_ns = 0;
  // The pipeline node with the most work of its own: the self time of its GetNext spans
  // (category "pipeline", without the waits on its workers, category "wait" or "prefetch"), plus
  // its parallel calls on worker threads (category "map", "<node> call"); empty when none.
  std::string slowest_node;
  int64_t slowest_node_self_ns = 0;
  // Device tracks (a GPU stream's kernels, timed by CUDA events): how long the device was busy
  // (the union of its spans) within the window the steps span (or, without steps, its own
  // spans' first start to last end). busy / window is the device's utilisation.
  struct Device {
    std::string track;
    int64_t spans = 0;
    int64_t busy_ns = 0;
    int64_t window_ns = 0;
  };
  std::vector<Device> devices;
};

TraceStats ComputeStats(const std::vector<ThreadTrace>& threads);

// The text summary: the top ops by total time (as the TF profiler's overview page), the step-time
// breakdown as shares, the slowest pipeline node, each device's utilisation and its top kernels,
// and a one-line verdict (input-bound or compute-bound, with the input share that says so).
std::string Summarize(const std::vector<ThreadTrace>& threads, int64_t dropped);

}  // namespace sluice::profiler

#endif  // SLUICE_PROFILER_TRACE_SUMMARY_H_
