#ifndef SLUICE_CORE_TRACE_EVENT_H_
#define SLUICE_CORE_TRACE_EVENT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::profiler {

// One recorded event: a complete span, or a counter's value (`dur_ns` unused).
struct TraceEvent {
  const char* category;
  const char* name;
  int64_t start_ns;  // on the profiler's clock, from the profile's start
  int64_t dur_ns;
  double value;
  bool counter;
};

// Tracks (RecordTrackSpan: a GPU stream's kernels) carry this tid and up, above any Linux
// thread id.
inline constexpr int64_t kFirstTrackTid = int64_t{1} << 40;

// The events one thread (or track) recorded, oldest first.
struct ThreadTrace {
  int64_t tid = 0;
  std::string name;  // the thread's name, when it has one
  std::vector<TraceEvent> events;
};

}  // namespace sluice::profiler

#endif  // SLUICE_CORE_TRACE_EVENT_H_
