#ifndef SLUICE_TRAIN_OPS_MATMUL_BIAS_H_
#define SLUICE_TRAIN_OPS_MATMUL_BIAS_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// max(a b + bias, 0) when `relu`, else a b + bias, in one kernel (Backend::MatMulBias): a dense
// layer's forward. a [m, k] and b [k, n] as MatMul takes them (float32, read as bfloat16 under
// mixed_bfloat16 on the CPU), bias float32 [n], the result float32 [m, n]. The values and
// gradients of Relu(Add(MatMul(a, b), bias)) (tests/train/ops/matmul_bias_test.cc); the bias's
// gradient is summed as Add's backward sums it.
absl::StatusOr<Tensor> MatMulBias(const Tensor& a, const Tensor& b, const Tensor& bias, bool relu);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_MATMUL_BIAS_H_
