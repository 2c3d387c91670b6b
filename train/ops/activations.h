#ifndef SLUICE_TRAIN_OPS_ACTIVATIONS_H_
#define SLUICE_TRAIN_OPS_ACTIVATIONS_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// Elementwise float32 activations.
absl::StatusOr<Tensor> Relu(const Tensor& x);  // gradient 0 at x == 0, as in TF
// Relu(x) as the matmul and convolution kernels read it (Backend::ComputeOperand): where the
// backend reads bfloat16 operands (the CPU under mixed_bfloat16), a bfloat16 tensor made in one
// pass, instead of a float32 relu, kept for its gradient, and a copy of it; elsewhere Relu(x).
// Its gradient is float32. For a tensor that only Conv2D reads, as ResidualBlock's inner relu.
absl::StatusOr<Tensor> ReluComputeOperand(const Tensor& x);
absl::StatusOr<Tensor> Sigmoid(const Tensor& x);
absl::StatusOr<Tensor> Tanh(const Tensor& x);
// Exact GELU, x * Phi(x) with the normal CDF (Keras' approximate=False).
absl::StatusOr<Tensor> Gelu(const Tensor& x);
// log(1 + e^x), computed as log1p(e^-|x|) + max(x, 0) so that it neither overflows for large x
// nor rounds to 0 for very negative x. Its gradient is sigmoid(x).
absl::StatusOr<Tensor> Softplus(const Tensor& x);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_ACTIVATIONS_H_
