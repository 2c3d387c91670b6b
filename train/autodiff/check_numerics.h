#ifndef SLUICE_TRAIN_AUTODIFF_CHECK_NUMERICS_H_
#define SLUICE_TRAIN_AUTODIFF_CHECK_NUMERICS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/tensor.h"

namespace sluice::train::autodiff {

// tf.debugging.enable_check_numerics: a debug mode, process-wide, in which the first op whose
// output (or, in a backward pass, whose input gradient) holds a NaN or an Inf fails with
// InvalidArgument naming the op, the layer it ran in and the training step. Each check reads one
// number back from the device, so it is slow; off (the default) an op pays one relaxed atomic
// load.
void EnableCheckNumerics();
void DisableCheckNumerics();
bool CheckNumericsEnabled();

// Called by every op that computes new values on its output: OK unless checks are on and
// `output` (float32) holds a NaN or an Inf.
absl::Status CheckNumerics(const char* op, const Tensor& output);
// The same for the gradients a backward pass computes for `op`'s inputs.
absl::Status CheckGradientNumerics(const std::string& op, const Tensor& gradient);
// The op and layer of the last CheckNumerics on this thread, "Conv2D in layer 0 (conv2d)": the
// tape keeps it with a recorded op to name it in the backward pass.
std::string LastCheckedOp();
// The op name of the last CheckNumerics on this thread, on or off ("Conv2D"; nullptr before
// any): the tape keeps it with each recorded op so that the profiler names backward spans.
const char* LastOpName();

// Names the layer running on this thread in numeric-check errors while it lives (containers
// make one per child, only when checks are on). Nested scopes join: "layer 1 (sequential) /
// layer 0 (dense)".
class NumericsLayerScope {
 public:
  explicit NumericsLayerScope(std::string layer);
  ~NumericsLayerScope();
  NumericsLayerScope(const NumericsLayerScope&) = delete;
  NumericsLayerScope& operator=(const NumericsLayerScope&) = delete;

 private:
  size_t previous_size_;
};

// The training step the errors on this thread name (Fit sets it before each step); -1: none.
void SetNumericsStep(int64_t step);

}  // namespace sluice::train::autodiff

#endif  // SLUICE_TRAIN_AUTODIFF_CHECK_NUMERICS_H_
