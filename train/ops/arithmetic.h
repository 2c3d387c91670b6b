#ifndef SLUICE_TRAIN_OPS_ARITHMETIC_H_
#define SLUICE_TRAIN_OPS_ARITHMETIC_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// Elementwise float32 arithmetic with NumPy broadcasting. The gradient of a
// broadcast input is summed over the dims it was repeated along.
absl::StatusOr<Tensor> Add(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Sub(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Mul(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Div(const Tensor& a, const Tensor& b);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_ARITHMETIC_H_
