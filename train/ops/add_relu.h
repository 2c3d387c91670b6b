#ifndef SLUICE_TRAIN_OPS_ADD_RELU_H_
#define SLUICE_TRAIN_OPS_ADD_RELU_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// Relu(Add(a, b)) in one pass over the activations, forward and backward (Backend::AddRelu): a
// residual block's tail. a and b have one shape (no broadcasting); each is float32 or, on a
// backend that reads bfloat16 operands, bfloat16 (a batch norm's output under mixed_bfloat16).
// The sum is taken in float32; the result is float32 or, with `keep_compute_dtype` under a policy
// whose kernels read bfloat16 (Conv2DOptions' option), bfloat16, rounded once. Each gradient
// comes in its operand's type. Bit for bit Relu(Add(a, b)) for float32 operands and result.
absl::StatusOr<Tensor> AddRelu(const Tensor& a, const Tensor& b, bool keep_compute_dtype = false);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_ADD_RELU_H_
