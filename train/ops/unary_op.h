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

}  // namespace sluice::train::ops::internal

#endif  // SLUICE_TRAIN_OPS_UNARY_OP_H_
