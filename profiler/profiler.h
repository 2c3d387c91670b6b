#ifndef SLUICE_PROFILER_PROFILER_H_
#define SLUICE_PROFILER_PROFILER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/trace_recorder.h"

namespace sluice::profiler {

// One timeline of the whole process, like tf.profiler.experimental.start/stop: spans (Chrome
// trace "complete" events) recorded by the pipeline's nodes, the training step and the
// collectives, and counters sampled meanwhile (RSS, allocator bytes, pipeline buffers and
// AUTOTUNE knobs). Stop writes the Chrome trace-event JSON that Perfetto's UI and
// chrome://tracing open, also where TensorBoard's profile plugin looks, and a text summary.
//
// Each thread records into its own ring buffer; when one fills, its oldest events are dropped
// and counted. Off (the default), a span costs one relaxed atomic load and allocates nothing.

struct ProfilerOptions {
  // Events kept per thread (48 bytes each); older ones are dropped when a thread records more.
  int64_t events_per_thread = 1 << 16;
  // How often the counters are sampled; 0: never.
  int64_t counter_interval_ms = 10;
  // The TensorBoard run's name (DIR/plugins/profile/RUN/); empty: the start time,
  // "2026_11_24_05_30_00".
  std::string run_name;
};

// Starts recording; the files go under `dir` at Stop. FailedPrecondition when already started.
absl::Status Start(const std::string& dir, ProfilerOptions options = {});

struct Report {
  std::string trace_path;        // DIR/trace.json
  std::string tensorboard_path;  // DIR/plugins/profile/RUN/HOST.trace.json.gz
  std::string summary;           // the text summary (also DIR/summary.txt)
  int64_t events = 0;            // spans and counters written
  int64_t dropped = 0;           // events the ring buffers dropped
};
// Stops recording and writes the files (each to a temporary file renamed into place).
absl::StatusOr<Report> Stop();

}  // namespace sluice::profiler

#endif  // SLUICE_PROFILER_PROFILER_H_
