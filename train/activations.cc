#include "train/activations.h"

#include "core/status_macros.h"
#include "train/backend.h"
#include "train/broadcast.h"
#include "train/tape.h"

namespace sluice::train {
namespace {

// y = f(x) elementwise; the backward multiplies by f'(x), which the backend
// computes from x or y.
absl::StatusOr<Tensor> Unary(UnaryOp op, const char* name, const Tensor& x) {
  RETURN_IF_ERROR(RequireFloat32(x, name, "x"));
  ASSIGN_OR_RETURN(Backend * backend, BackendFor(name, {&x}));
  ASSIGN_OR_RETURN(Tensor y, backend->Allocate(DType::kFloat32, x.shape()));
  RETURN_IF_ERROR(backend->Unary(op, x, y));
  if (ShouldRecord({x})) {
    RecordOperation(
        {x}, y,
        [backend, op, x, y](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          ASSIGN_OR_RETURN(Tensor gx, backend->Allocate(DType::kFloat32, x.shape()));
          RETURN_IF_ERROR(backend->UnaryBackward(op, x, y, g, gx));
          return std::vector<std::optional<Tensor>>{gx};
        });
  }
  return y;
}

}  // namespace

absl::StatusOr<Tensor> Relu(const Tensor& x) { return Unary(UnaryOp::kRelu, "Relu", x); }
absl::StatusOr<Tensor> Sigmoid(const Tensor& x) { return Unary(UnaryOp::kSigmoid, "Sigmoid", x); }
absl::StatusOr<Tensor> Tanh(const Tensor& x) { return Unary(UnaryOp::kTanh, "Tanh", x); }
absl::StatusOr<Tensor> Gelu(const Tensor& x) { return Unary(UnaryOp::kGelu, "Gelu", x); }

}  // namespace sluice::train
