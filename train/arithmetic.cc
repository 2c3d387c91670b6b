#include "train/arithmetic.h"

#include "core/status_macros.h"
#include "train/backend.h"
#include "train/broadcast.h"
#include "train/tape.h"

namespace sluice::train {
namespace {

const char* Name(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "Add";
    case BinaryOp::kSub:
      return "Sub";
    case BinaryOp::kMul:
      return "Mul";
    case BinaryOp::kDiv:
      return "Div";
  }
  return "";
}

absl::StatusOr<Tensor> Binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  RETURN_IF_ERROR(RequireFloat32(a, Name(op), "a"));
  RETURN_IF_ERROR(RequireFloat32(b, Name(op), "b"));
  ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(a.shape(), b.shape()));
  ASSIGN_OR_RETURN(Backend * backend, BackendFor(Name(op), {&a, &b}));
  ASSIGN_OR_RETURN(Tensor out, backend->Allocate(DType::kFloat32, shape));
  RETURN_IF_ERROR(backend->Binary(op, a, b, out));
  if (ShouldRecord({a, b})) {
    const bool need_a = ShouldRecord({a}), need_b = ShouldRecord({b});
    RecordOperation(
        {a, b}, out,
        [backend, op, a, b, need_a,
         need_b](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          std::vector<std::optional<Tensor>> grads(2);
          // The gradient of a + b (or a - b) for an operand of the output's
          // shape is g itself: no copy (the tape makes its own when it must).
          const bool pass_a =
              need_a && (op == BinaryOp::kAdd || op == BinaryOp::kSub) && a.shape() == g.shape();
          const bool pass_b = need_b && op == BinaryOp::kAdd && b.shape() == g.shape();
          if (pass_a) grads[0] = g;
          if (pass_b) grads[1] = g;
          const bool compute_a = need_a && !pass_a, compute_b = need_b && !pass_b;
          if (compute_a) {
            ASSIGN_OR_RETURN(grads[0], backend->Allocate(DType::kFloat32, a.shape()));
          }
          if (compute_b) {
            ASSIGN_OR_RETURN(grads[1], backend->Allocate(DType::kFloat32, b.shape()));
          }
          if (compute_a || compute_b) {
            RETURN_IF_ERROR(backend->BinaryBackward(op, a, b, g, compute_a ? &*grads[0] : nullptr,
                                                    compute_b ? &*grads[1] : nullptr));
          }
          return grads;
        });
  }
  return out;
}

}  // namespace

absl::StatusOr<Tensor> Add(const Tensor& a, const Tensor& b) {
  return Binary(BinaryOp::kAdd, a, b);
}
absl::StatusOr<Tensor> Sub(const Tensor& a, const Tensor& b) {
  return Binary(BinaryOp::kSub, a, b);
}
absl::StatusOr<Tensor> Mul(const Tensor& a, const Tensor& b) {
  return Binary(BinaryOp::kMul, a, b);
}
absl::StatusOr<Tensor> Div(const Tensor& a, const Tensor& b) {
  return Binary(BinaryOp::kDiv, a, b);
}

}  // namespace sluice::train
