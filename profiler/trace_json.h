#ifndef SLUICE_PROFILER_TRACE_JSON_H_
#define SLUICE_PROFILER_TRACE_JSON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/trace_event.h"

namespace sluice::profiler {

// The Chrome trace-event JSON of `threads` ({"traceEvents": [...]}, times in microseconds):
// thread-name metadata, a complete ("X") event per span, a counter ("C") event per sample.
// Perfetto's UI, chrome://tracing and TensorBoard's profile plugin read it.
std::string TraceJson(const std::vector<ThreadTrace>& threads, int64_t pid);

// `data` gzip-compressed (TensorBoard reads HOST.trace.json.gz).
absl::StatusOr<std::string> Gzip(absl::string_view data);

}  // namespace sluice::profiler

#endif  // SLUICE_PROFILER_TRACE_JSON_H_
