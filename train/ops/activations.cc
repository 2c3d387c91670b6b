#include "train/ops/activations.h"

#include "core/status_macros.h"
#include "train/backend/backend.h"
#include "train/ops/unary_op.h"

namespace sluice::train::ops {

using internal::UnaryOp;

absl::StatusOr<Tensor> Relu(const Tensor& x) { return UnaryOp(backend::UnaryOp::kRelu, "Relu", x); }
absl::StatusOr<Tensor> Sigmoid(const Tensor& x) {
  return UnaryOp(backend::UnaryOp::kSigmoid, "Sigmoid", x);
}
absl::StatusOr<Tensor> Tanh(const Tensor& x) { return UnaryOp(backend::UnaryOp::kTanh, "Tanh", x); }
absl::StatusOr<Tensor> Gelu(const Tensor& x) { return UnaryOp(backend::UnaryOp::kGelu, "Gelu", x); }
absl::StatusOr<Tensor> Softplus(const Tensor& x) {
  return UnaryOp(backend::UnaryOp::kSoftplus, "Softplus", x);
}

}  // namespace sluice::train::ops
