#ifndef SLUICE_TRAIN_OPS_MATMUL_H_
#define SLUICE_TRAIN_OPS_MATMUL_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

struct MatMulOptions {
  bool transpose_a = false;
  bool transpose_b = false;
};

// op(a) [M, K] x op(b) [K, N] -> [M, N], float32, rank 2, on the backend of
// the operands' device (oneDNN's matmul on the CPU). op() transposes when the
// option says so; transposes are read through strides, never copied.
absl::StatusOr<Tensor> MatMul(const Tensor& a, const Tensor& b, MatMulOptions options = {});

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_MATMUL_H_
