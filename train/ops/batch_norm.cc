#include "train/ops/batch_norm.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/require_float32.h"
#include "train/ops/activations.h"

namespace sluice::train::ops {
namespace {

absl::Status CheckShapes(const char* name, const Tensor& x,
                         std::initializer_list<const Tensor*> params) {
  // bfloat16 activations (mixed_bfloat16's, on a backend that keeps them so) are normalised in
  // bfloat16 with float32 statistics; the output and the gradients take x's type.
  if (x.dtype() != DType::kBFloat16) {
    SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(x, name, "x"));
  }
  if (x.rank() < 1)
    return absl::InvalidArgumentError(absl::StrCat(name, ": x must have rank >= 1"));
  const int64_t c = x.dim(x.rank() - 1);
  for (const Tensor* p : params) {
    SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(*p, name, "parameter"));
    if (p->rank() != 1 || p->dim(0) != c) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": parameters must be [", c, "] for x ",
                                                     x.shape().DebugString(), ", got ",
                                                     p->shape().DebugString()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBackendReads(const char* name, const Tensor& x, backend::Backend& backend) {
  if (x.dtype() == DType::kBFloat16 && !backend.ReadsBFloat16Operands()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": x is bfloat16, which ",
                                                   backend.device().DebugString(),
                                                   " normalises only under mixed_bfloat16"));
  }
  return absl::OkStatus();
}

// `t` in `dtype` (a gradient arriving in float32 for a bfloat16 activation, or the reverse).
absl::StatusOr<Tensor> SameType(backend::Backend& backend, const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  SLUICE_ASSIGN_OR_RETURN(Tensor converted, backend.Allocate(dtype, t.shape()));
  SLUICE_RETURN_IF_ERROR(backend.Cast(t, converted));
  return converted;
}

// dx, d gamma, d beta; then nullopt up to `inputs` entries (the statistics
// of inference get no gradient). With `workspace`, through the fused ReLU too.
absl::StatusOr<std::vector<std::optional<Tensor>>> Backward(
    backend::Backend& backend, const Tensor& x, const Tensor& gamma, const Tensor& mean,
    const Tensor& variance, const Tensor* workspace, const Tensor& g, float epsilon,
    bool statistics_are_constant, size_t inputs) {
  const int64_t c = x.dim(x.rank() - 1);
  SLUICE_ASSIGN_OR_RETURN(const Tensor gx, SameType(backend, g, x.dtype()));
  SLUICE_ASSIGN_OR_RETURN(Tensor dx, backend.Allocate(x.dtype(), x.shape()));
  SLUICE_ASSIGN_OR_RETURN(Tensor d_gamma, backend.Allocate(DType::kFloat32, Shape{c}));
  SLUICE_ASSIGN_OR_RETURN(Tensor d_beta, backend.Allocate(DType::kFloat32, Shape{c}));
  if (workspace != nullptr) {
    SLUICE_RETURN_IF_ERROR(backend.BatchNormReluBackward(x, gamma, mean, variance, *workspace, gx,
                                                         epsilon, dx, d_gamma, d_beta));
  } else {
    SLUICE_RETURN_IF_ERROR(backend.BatchNormBackward(x, gamma, mean, variance, gx, epsilon,
                                                     statistics_are_constant, dx, d_gamma, d_beta));
  }
  std::vector<std::optional<Tensor>> grads = {dx, d_gamma, d_beta};
  grads.resize(inputs);
  return grads;
}

}  // namespace

namespace {

absl::StatusOr<BatchNormTrainingResult> Training(const char* name, const Tensor& x,
                                                 const Tensor& gamma, const Tensor& beta,
                                                 float epsilon, bool relu) {
  SLUICE_RETURN_IF_ERROR(CheckShapes(name, x, {&gamma, &beta}));
  const int64_t c = x.dim(x.rank() - 1);
  const int64_t m = c == 0 ? 0 : x.num_elements() / c;
  if (m == 0) return absl::InvalidArgumentError(absl::StrCat(name, ": empty batch"));
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend,
                          backend::BackendFor(name, {&x, &gamma, &beta}));
  SLUICE_RETURN_IF_ERROR(CheckBackendReads(name, x, *backend));
  SLUICE_ASSIGN_OR_RETURN(Tensor y, backend->Allocate(x.dtype(), x.shape()));
  SLUICE_ASSIGN_OR_RETURN(Tensor mean, backend->Allocate(DType::kFloat32, Shape{c}));
  SLUICE_ASSIGN_OR_RETURN(Tensor variance, backend->Allocate(DType::kFloat32, Shape{c}));
  std::optional<Tensor> workspace;
  if (relu) {
    SLUICE_ASSIGN_OR_RETURN(
        workspace,
        backend->Allocate(DType::kUint8, Shape{backend->BatchNormReluWorkspaceBytes(x)}));
    SLUICE_RETURN_IF_ERROR(backend->BatchNormReluForwardTraining(x, gamma, beta, epsilon, y, mean,
                                                                 variance, *workspace));
  } else {
    SLUICE_RETURN_IF_ERROR(
        backend->BatchNormForwardTraining(x, gamma, beta, epsilon, y, mean, variance));
  }
  SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics(name, y));
  if (relu) {
    // The fused ReLU turns a NaN output to 0: the statistics still hold a NaN from x.
    SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics(name, mean));
    SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics(name, variance));
  }
  if (autodiff::ShouldRecord({x, gamma, beta})) {
    autodiff::RecordOperation(
        {x, gamma, beta}, y,
        [backend, x, gamma, mean, variance, workspace,
         epsilon](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          // Gradients flow through the batch statistics too.
          return Backward(*backend, x, gamma, mean, variance, workspace ? &*workspace : nullptr, g,
                          epsilon, /*statistics_are_constant=*/false, 3);
        });
  }
  return BatchNormTrainingResult{y, mean, variance};
}

}  // namespace

absl::StatusOr<BatchNormTrainingResult> BatchNormTraining(const Tensor& x, const Tensor& gamma,
                                                          const Tensor& beta, float epsilon) {
  return Training("BatchNormTraining", x, gamma, beta, epsilon, /*relu=*/false);
}

absl::StatusOr<BatchNormTrainingResult> BatchNormReluTraining(const Tensor& x, const Tensor& gamma,
                                                              const Tensor& beta, float epsilon) {
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend,
                          backend::BackendFor("BatchNormReluTraining", {&x, &gamma, &beta}));
  if (backend->FusesBatchNormRelu()) {
    return Training("BatchNormReluTraining", x, gamma, beta, epsilon, /*relu=*/true);
  }
  SLUICE_ASSIGN_OR_RETURN(BatchNormTrainingResult result,
                          Training("BatchNormTraining", x, gamma, beta, epsilon, /*relu=*/false));
  SLUICE_ASSIGN_OR_RETURN(result.output, Relu(result.output));
  return result;
}

absl::StatusOr<Tensor> BatchNormInference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          const Tensor& mean, const Tensor& variance,
                                          float epsilon) {
  SLUICE_RETURN_IF_ERROR(CheckShapes("BatchNormInference", x, {&gamma, &beta, &mean, &variance}));
  SLUICE_ASSIGN_OR_RETURN(
      backend::Backend * backend,
      backend::BackendFor("BatchNormInference", {&x, &gamma, &beta, &mean, &variance}));
  SLUICE_RETURN_IF_ERROR(CheckBackendReads("BatchNormInference", x, *backend));
  SLUICE_ASSIGN_OR_RETURN(Tensor y, backend->Allocate(x.dtype(), x.shape()));
  if (x.num_elements() == 0) return y;
  SLUICE_RETURN_IF_ERROR(
      backend->BatchNormForwardInference(x, gamma, beta, mean, variance, epsilon, y));
  SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics("BatchNormInference", y));
  if (autodiff::ShouldRecord({x, gamma, beta, mean, variance})) {
    autodiff::RecordOperation(
        {x, gamma, beta, mean, variance}, y,
        [backend, x, gamma, mean, variance,
         epsilon](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          return Backward(*backend, x, gamma, mean, variance, /*workspace=*/nullptr, g, epsilon,
                          /*statistics_are_constant=*/true, 5);
        });
  }
  return y;
}

}  // namespace sluice::train::ops
