#ifndef SLUICE_CORE_TRACE_RECORDER_H_
#define SLUICE_CORE_TRACE_RECORDER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/trace_event.h"

namespace sluice::profiler {

// The recording half of the profiler (profiler/profiler.h starts and stops it and writes the
// files): spans and counters go into per-thread ring buffers while recording is on. In core/ so
// that every module can record; off, a span costs one relaxed atomic load and allocates nothing.

// Whether a profile is being recorded.
bool Active();

// Nanoseconds on the profiler's clock (steady).
int64_t NowNs();

// A stable copy of `name` for spans whose names are made at run time (pipeline nodes, layers):
// the first call with a name allocates, later ones look it up.
const char* Intern(absl::string_view name);

// Records a complete span on this thread. `category` and `name` must outlive the profile
// (literals, or Intern()). Does nothing when not Active().
void RecordSpan(const char* category, const char* name, int64_t start_ns, int64_t end_ns);
// Records a counter's value now (Perfetto draws counters as tracks).
void RecordCounter(const char* name, double value);

// Records a complete span on the track named `track` (made on first use, shown in the trace as
// a thread of that name), for work timed somewhere other than on the calling thread: a GPU
// stream's kernels, timed by CUDA events and recorded when they are known to have finished.
// `track`, `category` and `name` must outlive the profile; the times are on NowNs()'s clock.
void RecordTrackSpan(const char* track, const char* category, const char* name, int64_t start_ns,
                     int64_t end_ns);

// A span from construction to destruction, when the profiler was active at construction.
class Span {
 public:
  Span(const char* category, const char* name)
      : category_(category), name_(Active() ? name : nullptr), start_(name_ ? NowNs() : 0) {}
  ~Span() {
    if (name_ != nullptr) RecordSpan(category_, name_, start_, NowNs());
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  const char* category_;
  const char* name_;
  int64_t start_;
};

// Counters sampled while recording: `source` is called on the profiler's sampling thread with
// a function to report (name, value) pairs. Returns an id for UnregisterCounterSource, which
// waits for a sample in progress. RSS is built in.
using CounterReporter = std::function<void(absl::string_view name, double value)>;
int RegisterCounterSource(std::function<void(const CounterReporter&)> source);
void UnregisterCounterSource(int id);

// Recorders that hold events back until they are known (a GPU's kernel times, read once the
// kernels have run) register a hook that EndRecording calls first, while still recording, to
// record them. Returns an id for UnregisterFlushHook, which waits for a flush in progress.
int RegisterFlushHook(std::function<void()> hook);
void UnregisterFlushHook(int id);

// For profiler::Start and Stop. BeginRecording starts a new recording (each thread's buffer
// holds `events_per_thread` events) and the counter sampling every `counter_interval_ms` (0:
// none); EndRecording stops both and returns every thread's events, oldest first, and how many
// the rings dropped.
void BeginRecording(int64_t events_per_thread, int64_t counter_interval_ms);
std::vector<ThreadTrace> EndRecording(int64_t* dropped);

}  // namespace sluice::profiler

#endif  // SLUICE_CORE_TRACE_RECORDER_H_
