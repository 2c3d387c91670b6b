#ifndef SLUICE_TRAIN_OPS_ACTIVATIONS_H_
#define SLUICE_TRAIN_OPS_ACTIVATIONS_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// Elementwise float32 activations.
absl::StatusOr<Tensor> Relu(const Tensor& x);  // gradient 0 at x == 0, as in TF
absl::StatusOr<Tensor> Sigmoid(const Tensor& x);
absl::StatusOr<Tensor> Tanh(const Tensor& x);
// Exact GELU, x * Phi(x) with the normal CDF (Keras' approximate=False).
absl::StatusOr<Tensor> Gelu(const Tensor& x);
// log(1 + e^x), computed as log1p(e^-|x|) + max(x, 0) so that it neither overflows for large x
// nor rounds to 0 for very negative x. Its gradient is sigmoid(x).
absl::StatusOr<Tensor> Softplus(const Tensor& x);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_ACTIVATIONS_H_
