// CudaBackend's batch norm over x [.., C] (channels innermost, as NHWC), with or without the
// ReLU after it: our kernels (batch_norm_kernels.cu), each sum in a fixed order. They replaced
// cuDNN's spatial batch norm, which on NHWC float32 took 40 times what reading the tensor takes
// (docs/benchmarks.md, "GPU").

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/batch_norm_rows.h"
#include "train/backend/cuda/cuda_backend.h"
#include "train/backend/cuda/cuda_check.h"
#include "train/backend/cuda/kernels.h"
#include "train/backend/require_float32.h"

namespace sluice::train::backend::cuda {
namespace {

float* F(const Tensor& t) { return static_cast<float*>(const_cast<void*>(t.raw_data())); }
uint8_t* Mask(const Tensor* t) {
  return t == nullptr ? nullptr : static_cast<uint8_t*>(const_cast<void*>(t->raw_data()));
}

// The sums' column tiles are a grid dimension (at most 65,535 tiles of 32 channels).
absl::Status CheckChannels(const char* op, int64_t c) {
  if (c > kernels::kBatchNormMaxChannels) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": ", c, " channels; at most ", kernels::kBatchNormMaxChannels));
  }
  return absl::OkStatus();
}

absl::Status CheckMask(const char* op, const Tensor& workspace, const Tensor& x) {
  if (workspace.dtype() != DType::kUint8 || workspace.num_elements() < x.num_elements()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": the workspace must be uint8 of at least ", x.num_elements(),
                     " bytes (BatchNormReluWorkspaceBytes), not ", DTypeName(workspace.dtype()),
                     workspace.shape().DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CudaBackend::BatchNormTraining(const Tensor& x, const Tensor& gamma,
                                            const Tensor& beta, float epsilon, Tensor& y,
                                            Tensor& mean, Tensor& variance,
                                            const Tensor* relu_mask) {
  SLUICE_RETURN_IF_ERROR(train::backend::RequireFloat32(x, "CudaBackend::BatchNorm", "x"));
  const auto s = train::backend::BatchNormRowsOf(x);
  SLUICE_RETURN_IF_ERROR(CheckChannels("CudaBackend::BatchNorm", s.c));
  if (s.c == 0) return absl::OkStatus();
  if (s.m == 0) {
    SLUICE_RETURN_IF_ERROR(Fill(mean, 0.0f));
    return Fill(variance, 0.0f);
  }
  // The mean, then the biased variance about it (two passes over x: no cancellation of large
  // squares), then y.
  const int slices = kernels::BatchNormSlices(s.m, s.c);
  SLUICE_ASSIGN_OR_RETURN(Tensor partial, Allocate(DType::kFloat32, Shape{2, slices, s.c}));
  CUDA_RETURN_IF_ERROR(
      kernels::BatchNormMean(F(x), s.m, s.c, slices, F(partial), F(mean), stream()));
  CUDA_RETURN_IF_ERROR(kernels::BatchNormVariance(F(x), F(mean), s.m, s.c, slices, F(partial),
                                                  F(variance), stream()));
  CUDA_RETURN_IF_ERROR(kernels::BatchNormNormalize(F(x), F(mean), F(variance), F(gamma), F(beta),
                                                   epsilon, F(y), Mask(relu_mask), s.m, s.c,
                                                   stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::BatchNormForwardTraining(const Tensor& x, const Tensor& gamma,
                                                   const Tensor& beta, float epsilon, Tensor& y,
                                                   Tensor& mean, Tensor& variance) {
  SLUICE_ASSIGN_OR_RETURN(
      const KernelTimer::Scope timed,
      Enter("BatchNormForwardTraining", {&x, &gamma, &beta, &y, &mean, &variance}));
  return BatchNormTraining(x, gamma, beta, epsilon, y, mean, variance, nullptr);
}

int64_t CudaBackend::BatchNormReluWorkspaceBytes(const Tensor& x) const {
  return x.num_elements();  // the ReLU's mask, a byte an element
}

absl::Status CudaBackend::BatchNormReluForwardTraining(const Tensor& x, const Tensor& gamma,
                                                       const Tensor& beta, float epsilon, Tensor& y,
                                                       Tensor& mean, Tensor& variance,
                                                       Tensor& workspace) {
  SLUICE_ASSIGN_OR_RETURN(
      const KernelTimer::Scope timed,
      Enter("BatchNormReluForwardTraining", {&x, &gamma, &beta, &y, &mean, &variance, &workspace}));
  SLUICE_RETURN_IF_ERROR(CheckMask("BatchNormReluForwardTraining", workspace, x));
  return BatchNormTraining(x, gamma, beta, epsilon, y, mean, variance, &workspace);
}

absl::Status CudaBackend::BatchNormForwardInference(const Tensor& x, const Tensor& gamma,
                                                    const Tensor& beta, const Tensor& mean,
                                                    const Tensor& variance, float epsilon,
                                                    Tensor& y) {
  SLUICE_ASSIGN_OR_RETURN(
      const KernelTimer::Scope timed,
      Enter("BatchNormForwardInference", {&x, &gamma, &beta, &mean, &variance, &y}));
  const auto s = train::backend::BatchNormRowsOf(x);
  CUDA_RETURN_IF_ERROR(kernels::BatchNormNormalize(F(x), F(mean), F(variance), F(gamma), F(beta),
                                                   epsilon, F(y), nullptr, s.m, s.c, stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::BatchNormGradients(const Tensor& x, const Tensor& gamma,
                                             const Tensor& mean, const Tensor& variance,
                                             const Tensor* relu_mask, const Tensor& grad_y,
                                             float epsilon, bool statistics_are_constant,
                                             Tensor& grad_x, Tensor& grad_gamma,
                                             Tensor& grad_beta) {
  const char* op = relu_mask == nullptr ? "CudaBackend::BatchNormBackward"
                                        : "CudaBackend::BatchNormReluBackward";
  for (const Tensor* t : {&x, &grad_y}) {
    SLUICE_RETURN_IF_ERROR(train::backend::RequireFloat32(*t, op, "x and grad_y"));
  }
  const auto s = train::backend::BatchNormRowsOf(x);
  SLUICE_RETURN_IF_ERROR(CheckChannels(op, s.c));
  if (s.c == 0) return absl::OkStatus();
  if (s.m == 0) {
    SLUICE_RETURN_IF_ERROR(Fill(grad_gamma, 0.0f));
    return Fill(grad_beta, 0.0f);
  }
  // grad_beta = sum g and grad_gamma = sum g xhat in one pass over x and g, then grad_x.
  const int slices = kernels::BatchNormSlices(s.m, s.c);
  SLUICE_ASSIGN_OR_RETURN(Tensor partial, Allocate(DType::kFloat32, Shape{2, slices, s.c}));
  CUDA_RETURN_IF_ERROR(kernels::BatchNormParamGrads(
      F(x), F(grad_y), Mask(relu_mask), F(mean), F(variance), epsilon, s.m, s.c, slices, F(partial),
      F(grad_gamma), F(grad_beta), stream()));
  CUDA_RETURN_IF_ERROR(kernels::BatchNormInputGrad(
      F(x), F(grad_y), Mask(relu_mask), F(gamma), F(mean), F(variance), epsilon, F(grad_gamma),
      F(grad_beta), statistics_are_constant, F(grad_x), s.m, s.c, stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::BatchNormBackward(const Tensor& x, const Tensor& gamma,
                                            const Tensor& mean, const Tensor& variance,
                                            const Tensor& grad_y, float epsilon,
                                            bool statistics_are_constant, Tensor& grad_x,
                                            Tensor& grad_gamma, Tensor& grad_beta) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed,
                          Enter("BatchNormBackward", {&x, &gamma, &mean, &variance, &grad_y,
                                                      &grad_x, &grad_gamma, &grad_beta}));
  return BatchNormGradients(x, gamma, mean, variance, nullptr, grad_y, epsilon,
                            statistics_are_constant, grad_x, grad_gamma, grad_beta);
}

absl::Status CudaBackend::BatchNormReluBackward(const Tensor& x, const Tensor& gamma,
                                                const Tensor& mean, const Tensor& variance,
                                                const Tensor& workspace, const Tensor& grad_y,
                                                float epsilon, Tensor& grad_x, Tensor& grad_gamma,
                                                Tensor& grad_beta) {
  SLUICE_ASSIGN_OR_RETURN(
      const KernelTimer::Scope timed,
      Enter("BatchNormReluBackward",
            {&x, &gamma, &mean, &variance, &workspace, &grad_y, &grad_x, &grad_gamma, &grad_beta}));
  SLUICE_RETURN_IF_ERROR(CheckMask("BatchNormReluBackward", workspace, x));
  return BatchNormGradients(x, gamma, mean, variance, &workspace, grad_y, epsilon,
                            /*statistics_are_constant=*/false, grad_x, grad_gamma, grad_beta);
}

}  // namespace sluice::train::backend::cuda
