#include "train/fit/step_phases.h"

#include "profiler/profiler.h"

namespace sluice::train::fit {

int64_t StepPhases::Begin() {
  mark_ns_ = profiler::Active() ? profiler::NowNs() : 0;
  return mark_ns_;
}

void StepPhases::Mark(const char* phase) {
  if (mark_ns_ == 0 || !profiler::Active()) return;
  const int64_t now = profiler::NowNs();
  profiler::RecordSpan("phase", phase, mark_ns_, now);
  mark_ns_ = now;
}

void StepPhases::End(int64_t step_start) {
  if (step_start == 0 || !profiler::Active()) return;
  profiler::RecordSpan("step", "step", step_start, mark_ns_);
  mark_ns_ = 0;
}

}  // namespace sluice::train::fit
