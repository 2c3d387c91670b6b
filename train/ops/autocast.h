#ifndef SLUICE_TRAIN_OPS_AUTOCAST_H_
#define SLUICE_TRAIN_OPS_AUTOCAST_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// Keras' autocast, for the ops whose kernels are float32: a bfloat16 activation (a layer's output
// under mixed_bfloat16, such as a residual block's) is read as float32 through Cast, whose
// gradient casts back. Any other tensor comes back as it is, for the op's own checks.
absl::StatusOr<Tensor> AutoCast(const Tensor& x);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_AUTOCAST_H_
