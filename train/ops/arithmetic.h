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
// The larger (smaller) of a and b elementwise; a NaN in either comes through. The gradient goes
// to the operand picked, and on a tie to a (tf.maximum sends it to both), so that clipping
// Minimum(Maximum(x, lo), hi) passes the gradient at the bounds, as tf.clip_by_value.
absl::StatusOr<Tensor> Maximum(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Minimum(const Tensor& a, const Tensor& b);
// Comparisons with broadcasting: 1.0f where a == b (a > b), else 0, float32 so that the result
// can be summed or multiplied on the device. No gradient flows through them.
absl::StatusOr<Tensor> Equal(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Greater(const Tensor& a, const Tensor& b);

// Elementwise float32 math.
absl::StatusOr<Tensor> Exp(const Tensor& x);
absl::StatusOr<Tensor> Log(const Tensor& x);     // gradient 1 / x
absl::StatusOr<Tensor> Abs(const Tensor& x);     // gradient sign(x), 0 at x == 0, as in TF
absl::StatusOr<Tensor> Square(const Tensor& x);  // x * x, gradient 2x

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_ARITHMETIC_H_
