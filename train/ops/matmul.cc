#include "train/ops/matmul.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/compute_precision.h"
#include "train/backend/require_float32.h"

namespace sluice::train::ops {

absl::StatusOr<Tensor> MatMul(const Tensor& a, const Tensor& b, MatMulOptions options) {
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(a, "MatMul", "a"));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(b, "MatMul", "b"));
  if (a.rank() != 2 || b.rank() != 2) {
    return absl::InvalidArgumentError(absl::StrCat("MatMul: want rank-2 operands, got ",
                                                   a.shape().DebugString(), " and ",
                                                   b.shape().DebugString()));
  }
  const bool ta = options.transpose_a, tb = options.transpose_b;
  const int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1);
  const int64_t kb = tb ? b.dim(1) : b.dim(0), n = tb ? b.dim(0) : b.dim(1);
  if (k != kb) {
    return absl::InvalidArgumentError(
        absl::StrCat("MatMul: inner dimensions differ: ", a.shape().DebugString(), (ta ? "^T" : ""),
                     " x ", b.shape().DebugString(), (tb ? "^T" : "")));
  }
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("MatMul", {&a, &b}));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, backend->Allocate(DType::kFloat32, Shape{m, n}));
  SLUICE_RETURN_IF_ERROR(backend->MatMul(a, ta, b, tb, out));
  SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics("MatMul", out));
  if (autodiff::ShouldRecord({a, b})) {
    // A dense layer's input batch needs no gradient: skip that product.
    const bool need_a = autodiff::ShouldRecord({a}), need_b = autodiff::ShouldRecord({b});
    autodiff::RecordOperation(
        {a, b}, out,
        [a, b, ta, tb, need_a, need_b, precision = backend::CurrentPrecision()](
            const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          // dA = g op(b)^T, dB = op(a)^T g, each laid out like its operand, under the forward
          // pass's precision policy.
          backend::ScopedPrecision scope(precision);
          std::vector<std::optional<Tensor>> grads(2);
          if (need_a) {
            SLUICE_ASSIGN_OR_RETURN(grads[0],
                                    ta ? MatMul(b, g, {tb, true}) : MatMul(g, b, {false, !tb}));
          }
          if (need_b) {
            SLUICE_ASSIGN_OR_RETURN(grads[1],
                                    tb ? MatMul(g, a, {true, ta}) : MatMul(a, g, {!ta, false}));
          }
          return grads;
        });
  }
  return out;
}

}  // namespace sluice::train::ops
