#ifndef SLUICE_TRAIN_OPS_UNARY_OP_H_
#define SLUICE_TRAIN_OPS_UNARY_OP_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "train/backend/backend.h"

namespace sluice::train::ops::internal {

// y = f(x) elementwise over float32 x, recorded with the backward that multiplies by f'(x) (the
// backend computes it from x or y). `name` names the op in errors. Shared by the activations and
// the elementwise math ops.
absl::StatusOr<Tensor> UnaryOp(backend::UnaryOp op, const char* name, const Tensor& x);

// The gradient before a ReLU that ran inside another op's kernel, from that op's float32 output:
// g where out > 0 (the ReLU's backward from its output, as Relu's own). MatMulBias's and
// Conv2DBiasRelu's backward.
absl::StatusOr<Tensor> ReluGradientFromOutput(backend::Backend& backend, const Tensor& out,
                                              const Tensor& g);

}  // namespace sluice::train::ops::internal

#endif  // SLUICE_TRAIN_OPS_UNARY_OP_H_
