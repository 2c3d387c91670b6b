#include "train/ops/unary_op.h"

#include "core/status_macros.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/tape.h"
#include "train/backend/require_float32.h"
#include "train/ops/autocast.h"

namespace sluice::train::ops::internal {

absl::StatusOr<Tensor> UnaryOp(backend::UnaryOp op, const char* name, const Tensor& x_in) {
  SLUICE_ASSIGN_OR_RETURN(const Tensor x, AutoCast(x_in));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(x, name, "x"));
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(name, {&x}));
  SLUICE_ASSIGN_OR_RETURN(Tensor y, backend->Allocate(DType::kFloat32, x.shape()));
  SLUICE_RETURN_IF_ERROR(backend->Unary(op, x, y));
  SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics(name, y));
  if (autodiff::ShouldRecord({x})) {
    // Relu, sigmoid, tanh and exp differentiate from y: keeping x too would hold the layer
    // before's output (a batch norm's, say) until the backward pass for nothing.
    autodiff::RecordOperation(
        {x}, y,
        [backend, op, x = backend::UnaryGradientFromOutput(op) ? y : x,
         y](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          SLUICE_ASSIGN_OR_RETURN(Tensor gx, backend->Allocate(DType::kFloat32, x.shape()));
          SLUICE_RETURN_IF_ERROR(backend->UnaryBackward(op, x, y, g, gx));
          return std::vector<std::optional<Tensor>>{gx};
        });
  }
  return y;
}

absl::StatusOr<Tensor> ReluGradientFromOutput(backend::Backend& backend, const Tensor& out,
                                              const Tensor& g) {
  SLUICE_ASSIGN_OR_RETURN(Tensor gz, backend.Allocate(DType::kFloat32, out.shape()));
  SLUICE_RETURN_IF_ERROR(backend.UnaryBackward(backend::UnaryOp::kRelu, out, out, g, gz));
  return gz;
}

}  // namespace sluice::train::ops::internal
