#include "train/ops/matmul_bias.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/compute_precision.h"
#include "train/backend/require_float32.h"
#include "train/ops/autocast.h"
#include "train/ops/matmul.h"
#include "train/ops/unary_op.h"

namespace sluice::train::ops {

absl::StatusOr<Tensor> MatMulBias(const Tensor& a_in, const Tensor& b_in, const Tensor& bias,
                                  bool relu) {
  SLUICE_ASSIGN_OR_RETURN(const Tensor a, AutoCast(a_in));
  SLUICE_ASSIGN_OR_RETURN(const Tensor b, AutoCast(b_in));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(a, "MatMulBias", "a"));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(b, "MatMulBias", "b"));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(bias, "MatMulBias", "bias"));
  if (a.rank() != 2 || b.rank() != 2 || bias.rank() != 1 || a.dim(1) != b.dim(0) ||
      bias.dim(0) != b.dim(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "MatMulBias: want a [m, k], b [k, n] and bias [n], got ", a.shape().DebugString(), ", ",
        b.shape().DebugString(), " and ", bias.shape().DebugString()));
  }
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend,
                          backend::BackendFor("MatMulBias", {&a, &b, &bias}));
  // As MatMul: each operand converted once under mixed_bfloat16, for the forward and backward.
  SLUICE_ASSIGN_OR_RETURN(const Tensor ac, backend->ComputeOperand(a));
  SLUICE_ASSIGN_OR_RETURN(const Tensor bc, backend->ComputeOperand(b));
  SLUICE_ASSIGN_OR_RETURN(Tensor out,
                          backend->Allocate(DType::kFloat32, Shape{a.dim(0), b.dim(1)}));
  SLUICE_RETURN_IF_ERROR(backend->MatMulBias(ac, bc, bias, relu, out));
  SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics("MatMulBias", out));
  if (autodiff::ShouldRecord({a, b, bias})) {
    const bool need_a = autodiff::ShouldRecord({a}), need_b = autodiff::ShouldRecord({b}),
               need_bias = autodiff::ShouldRecord({bias});
    autodiff::RecordOperation(
        {a, b, bias}, out,
        [backend, a = need_b ? ac : Tensor(), b = need_a ? bc : Tensor(), bias, out, relu, need_a,
         need_b, need_bias, precision = backend::CurrentPrecision()](
            const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          // The gradient before the ReLU: g where out > 0 (relu's backward from its output).
          Tensor gz = g;
          if (relu) {
            SLUICE_ASSIGN_OR_RETURN(gz, internal::ReluGradientFromOutput(*backend, out, g));
          }
          std::optional<Tensor> grad_bias;
          if (need_bias) {
            SLUICE_ASSIGN_OR_RETURN(grad_bias, backend->Allocate(DType::kFloat32, bias.shape()));
            // Add's backward for a broadcast bias: the same sum, so the same bits.
            SLUICE_RETURN_IF_ERROR(backend->BinaryBackward(backend::BinaryOp::kAdd, gz, bias, gz,
                                                           nullptr, &*grad_bias));
          }
          SLUICE_ASSIGN_OR_RETURN(std::vector<std::optional<Tensor>> grads,
                                  internal::MatMulGradients(*backend, a, false, b, false, gz,
                                                            need_a, need_b, precision));
          grads.push_back(std::move(grad_bias));
          return grads;
        });
  }
  return out;
}

}  // namespace sluice::train::ops
