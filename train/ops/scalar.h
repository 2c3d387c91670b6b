#ifndef SLUICE_TRAIN_OPS_SCALAR_H_
#define SLUICE_TRAIN_OPS_SCALAR_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// Arithmetic with a float constant, the constant made on the tensor's device (filled there,
// not copied from the host). The constant gets no gradient.

// A float32 scalar `value` on `like`'s device.
absl::StatusOr<Tensor> ScalarLike(float value, const Tensor& like);
// x * value.
absl::StatusOr<Tensor> Scale(const Tensor& x, float value);
// x + value.
absl::StatusOr<Tensor> AddScalar(const Tensor& x, float value);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_SCALAR_H_
