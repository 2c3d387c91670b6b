#ifndef SLUICE_TRAIN_FIT_STEP_PHASES_H_
#define SLUICE_TRAIN_FIT_STEP_PHASES_H_

#include <cstdint>

namespace sluice::train::fit {

// The profiler's step spans (category "step") and their phases (category "phase"), which
// partition each training step: Begin starts a step, Mark closes the phase that ends now, End
// records the step. Nothing happens unless the profiler is recording.
class StepPhases {
 public:
  // The step's start on the profiler's clock (0: not recording), for End.
  int64_t Begin();
  void Mark(const char* phase);
  void End(int64_t step_start);

 private:
  int64_t mark_ns_ = 0;  // the profiler's clock at the last phase boundary; 0: none
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_STEP_PHASES_H_
