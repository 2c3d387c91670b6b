#include "train/ops/arithmetic.h"

#include "core/status_macros.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/broadcast.h"
#include "train/backend/require_float32.h"
#include "train/ops/autocast.h"
#include "train/ops/unary_op.h"

namespace sluice::train::ops {
namespace {

const char* Name(backend::BinaryOp op) {
  switch (op) {
    case backend::BinaryOp::kAdd:
      return "Add";
    case backend::BinaryOp::kSub:
      return "Sub";
    case backend::BinaryOp::kMul:
      return "Mul";
    case backend::BinaryOp::kDiv:
      return "Div";
    case backend::BinaryOp::kMaximum:
      return "Maximum";
    case backend::BinaryOp::kMinimum:
      return "Minimum";
    case backend::BinaryOp::kEqual:
      return "Equal";
    case backend::BinaryOp::kGreater:
      return "Greater";
  }
  return "";
}

absl::StatusOr<Tensor> Binary(backend::BinaryOp op, const Tensor& a_in, const Tensor& b_in) {
  SLUICE_ASSIGN_OR_RETURN(const Tensor a, AutoCast(a_in));
  SLUICE_ASSIGN_OR_RETURN(const Tensor b, AutoCast(b_in));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(a, Name(op), "a"));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(b, Name(op), "b"));
  SLUICE_ASSIGN_OR_RETURN(Shape shape, backend::BroadcastShapes(a.shape(), b.shape()));
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(Name(op), {&a, &b}));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, backend->Allocate(DType::kFloat32, shape));
  SLUICE_RETURN_IF_ERROR(backend->Binary(op, a, b, out));
  // Comparisons are constant almost everywhere: nothing to record.
  const bool comparison = op == backend::BinaryOp::kEqual || op == backend::BinaryOp::kGreater;
  SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics(Name(op), out));
  if (!comparison && autodiff::ShouldRecord({a, b})) {
    const bool need_a = autodiff::ShouldRecord({a}), need_b = autodiff::ShouldRecord({b});
    // a + b of the output's shape hands g to both and reads neither operand: the tape need not
    // keep them (a residual branch's last activation would otherwise live until the backward).
    const bool keep_operands =
        !(op == backend::BinaryOp::kAdd && a.shape() == shape && b.shape() == shape);
    autodiff::RecordOperation(
        {a, b}, out,
        [backend, op, a = keep_operands ? a : Tensor(), b = keep_operands ? b : Tensor(),
         a_shape = a.shape(), b_shape = b.shape(), need_a,
         need_b](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          std::vector<std::optional<Tensor>> grads(2);
          // The gradient of a + b (or a - b) for an operand of the output's
          // shape is g itself: no copy (the tape makes its own when it must).
          const bool pass_a = need_a &&
                              (op == backend::BinaryOp::kAdd || op == backend::BinaryOp::kSub) &&
                              a_shape == g.shape();
          const bool pass_b = need_b && op == backend::BinaryOp::kAdd && b_shape == g.shape();
          if (pass_a) grads[0] = g;
          if (pass_b) grads[1] = g;
          const bool compute_a = need_a && !pass_a, compute_b = need_b && !pass_b;
          if (compute_a) {
            SLUICE_ASSIGN_OR_RETURN(grads[0], backend->Allocate(DType::kFloat32, a_shape));
          }
          if (compute_b) {
            SLUICE_ASSIGN_OR_RETURN(grads[1], backend->Allocate(DType::kFloat32, b_shape));
          }
          if (compute_a || compute_b) {
            SLUICE_RETURN_IF_ERROR(backend->BinaryBackward(
                op, a, b, g, compute_a ? &*grads[0] : nullptr, compute_b ? &*grads[1] : nullptr));
          }
          return grads;
        });
  }
  return out;
}

}  // namespace

absl::StatusOr<Tensor> Add(const Tensor& a, const Tensor& b) {
  return Binary(backend::BinaryOp::kAdd, a, b);
}
absl::StatusOr<Tensor> Sub(const Tensor& a, const Tensor& b) {
  return Binary(backend::BinaryOp::kSub, a, b);
}
absl::StatusOr<Tensor> Mul(const Tensor& a, const Tensor& b) {
  return Binary(backend::BinaryOp::kMul, a, b);
}
absl::StatusOr<Tensor> Div(const Tensor& a, const Tensor& b) {
  return Binary(backend::BinaryOp::kDiv, a, b);
}
absl::StatusOr<Tensor> Maximum(const Tensor& a, const Tensor& b) {
  return Binary(backend::BinaryOp::kMaximum, a, b);
}
absl::StatusOr<Tensor> Minimum(const Tensor& a, const Tensor& b) {
  return Binary(backend::BinaryOp::kMinimum, a, b);
}
absl::StatusOr<Tensor> Equal(const Tensor& a, const Tensor& b) {
  return Binary(backend::BinaryOp::kEqual, a, b);
}
absl::StatusOr<Tensor> Greater(const Tensor& a, const Tensor& b) {
  return Binary(backend::BinaryOp::kGreater, a, b);
}

absl::StatusOr<Tensor> Exp(const Tensor& x) {
  return internal::UnaryOp(backend::UnaryOp::kExp, "Exp", x);
}
absl::StatusOr<Tensor> Log(const Tensor& x) {
  return internal::UnaryOp(backend::UnaryOp::kLog, "Log", x);
}
absl::StatusOr<Tensor> Abs(const Tensor& x) {
  return internal::UnaryOp(backend::UnaryOp::kAbs, "Abs", x);
}
absl::StatusOr<Tensor> Square(const Tensor& x) {
  return internal::UnaryOp(backend::UnaryOp::kSquare, "Square", x);
}

}  // namespace sluice::train::ops
