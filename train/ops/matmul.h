#ifndef SLUICE_TRAIN_OPS_MATMUL_H_
#define SLUICE_TRAIN_OPS_MATMUL_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "train/backend/backend.h"
#include "train/backend/compute_precision.h"

namespace sluice::train::ops {

struct MatMulOptions {
  bool transpose_a = false;
  bool transpose_b = false;
};

// op(a) [M, K] x op(b) [K, N] -> [M, N], float32, rank 2, on the backend of
// the operands' device (oneDNN's matmul on the CPU). op() transposes when the
// option says so; transposes are read through strides, never copied.
absl::StatusOr<Tensor> MatMul(const Tensor& a, const Tensor& b, MatMulOptions options = {});

namespace internal {
// The gradients of op(a) op(b) for an output gradient g: dA = g op(b)^T and dB = op(a)^T g, each
// laid out like its operand, only where asked (need_a, need_b; nullopt otherwise), under the
// forward pass's `precision`, both reading one converted copy of g. a and b are the forward's
// compute operands (Backend::ComputeOperand). MatMul's backward, and MatMulBias's after its bias
// and ReLU.
absl::StatusOr<std::vector<std::optional<Tensor>>> MatMulGradients(
    backend::Backend& backend, const Tensor& a, bool ta, const Tensor& b, bool tb, const Tensor& g,
    bool need_a, bool need_b, backend::Precision precision);
}  // namespace internal

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_MATMUL_H_
