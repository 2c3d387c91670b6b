#include "train/ops/matmul.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/compute_precision.h"
#include "train/backend/require_float32.h"
#include "train/ops/autocast.h"

namespace sluice::train::ops {
namespace {

// op(x) op(y) on `backend`, the operands already checked (float32, or the backend's compute
// copies), the product float32.
absl::StatusOr<Tensor> Product(backend::Backend& backend, const Tensor& x, bool tx, const Tensor& y,
                               bool ty) {
  const int64_t m = tx ? x.dim(1) : x.dim(0), n = ty ? y.dim(0) : y.dim(1);
  SLUICE_ASSIGN_OR_RETURN(Tensor out, backend.Allocate(DType::kFloat32, Shape{m, n}));
  SLUICE_RETURN_IF_ERROR(backend.MatMul(x, tx, y, ty, out));
  SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics("MatMul", out));
  return out;
}

}  // namespace

namespace internal {

absl::StatusOr<std::vector<std::optional<Tensor>>> MatMulGradients(
    backend::Backend& backend, const Tensor& a, bool ta, const Tensor& b, bool tb, const Tensor& g,
    bool need_a, bool need_b, backend::Precision precision) {
  backend::ScopedPrecision scope(precision);
  SLUICE_ASSIGN_OR_RETURN(const Tensor gc, backend.ComputeOperand(g));
  std::vector<std::optional<Tensor>> grads(2);
  if (need_a) {
    SLUICE_ASSIGN_OR_RETURN(
        grads[0], ta ? Product(backend, b, tb, gc, true) : Product(backend, gc, false, b, !tb));
  }
  if (need_b) {
    SLUICE_ASSIGN_OR_RETURN(
        grads[1], tb ? Product(backend, gc, true, a, ta) : Product(backend, a, !ta, gc, false));
  }
  return grads;
}

}  // namespace internal

absl::StatusOr<Tensor> MatMul(const Tensor& a_in, const Tensor& b_in, MatMulOptions options) {
  SLUICE_ASSIGN_OR_RETURN(const Tensor a, AutoCast(a_in));
  SLUICE_ASSIGN_OR_RETURN(const Tensor b, AutoCast(b_in));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(a, "MatMul", "a"));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(b, "MatMul", "b"));
  if (a.rank() != 2 || b.rank() != 2) {
    return absl::InvalidArgumentError(absl::StrCat("MatMul: want rank-2 operands, got ",
                                                   a.shape().DebugString(), " and ",
                                                   b.shape().DebugString()));
  }
  const bool ta = options.transpose_a, tb = options.transpose_b;
  const int64_t k = ta ? a.dim(0) : a.dim(1);
  const int64_t kb = tb ? b.dim(1) : b.dim(0);
  if (k != kb) {
    return absl::InvalidArgumentError(
        absl::StrCat("MatMul: inner dimensions differ: ", a.shape().DebugString(), (ta ? "^T" : ""),
                     " x ", b.shape().DebugString(), (tb ? "^T" : "")));
  }
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("MatMul", {&a, &b}));
  // Under mixed_bfloat16 each operand is converted once: the forward and the backward read the
  // same copies (a dense layer's weights were converted twice a step before).
  SLUICE_ASSIGN_OR_RETURN(const Tensor ac, backend->ComputeOperand(a));
  SLUICE_ASSIGN_OR_RETURN(const Tensor bc, backend->ComputeOperand(b));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Product(*backend, ac, ta, bc, tb));
  if (autodiff::ShouldRecord({a, b})) {
    // A dense layer's input batch needs no gradient: skip that product, and keep only the
    // operand the other one needs.
    const bool need_a = autodiff::ShouldRecord({a}), need_b = autodiff::ShouldRecord({b});
    autodiff::RecordOperation(
        {a, b}, out,
        [backend, a = need_b ? ac : Tensor(), b = need_a ? bc : Tensor(), ta, tb, need_a, need_b,
         precision = backend::CurrentPrecision()](
            const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          return internal::MatMulGradients(*backend, a, ta, b, tb, g, need_a, need_b, precision);
        });
  }
  return out;
}

}  // namespace sluice::train::ops
