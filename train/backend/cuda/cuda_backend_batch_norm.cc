// CudaBackend's batch norm over x [.., C] (channels innermost, as NHWC): our elementwise kernels
// (batch_norm_kernels.cu) around per-channel column sums (Reduce's column kernel), each summed in
// a fixed order. It replaced cuDNN's spatial batch norm, which on NHWC float32 took 40 times
// what reading the tensor takes (docs/benchmarks.md, "GPU").

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/cuda/cuda_backend.h"
#include "train/backend/cuda/cuda_check.h"
#include "train/backend/cuda/kernels.h"

namespace sluice::train::backend::cuda {
namespace {

float* F(const Tensor& t) { return static_cast<float*>(const_cast<void*>(t.raw_data())); }

// x [.., C] as the rows [m, C] the statistics reduce over.
struct BnShape {
  int64_t m, c;
};
BnShape BnShapeOf(const Tensor& x) {
  const int64_t c = x.rank() == 0 ? 1 : x.dim(x.rank() - 1);
  return {c == 0 ? 0 : x.num_elements() / c, c};
}

}  // namespace

absl::Status CudaBackend::SumRows(const Tensor& rows, float scale, Tensor& out) {
  SLUICE_ASSIGN_OR_RETURN(Tensor out_view, out.Reshape(Shape{1, out.num_elements()}));
  return Reduce(train::backend::ReduceOp::kSum, rows, {true, false}, scale, out_view);
}

absl::Status CudaBackend::BatchNormForwardTraining(const Tensor& x, const Tensor& gamma,
                                                   const Tensor& beta, float epsilon, Tensor& y,
                                                   Tensor& mean, Tensor& variance) {
  SLUICE_ASSIGN_OR_RETURN(
      const KernelTimer::Scope timed,
      Enter("BatchNormForwardTraining", {&x, &gamma, &beta, &y, &mean, &variance}));
  const BnShape s = BnShapeOf(x);
  if (s.c == 0) return absl::OkStatus();
  if (s.m == 0) {
    SLUICE_RETURN_IF_ERROR(Fill(mean, 0.0f));
    return Fill(variance, 0.0f);
  }
  // The mean, then the biased variance about it (two passes: no cancellation of large squares).
  SLUICE_ASSIGN_OR_RETURN(const Tensor rows, x.Reshape(Shape{s.m, s.c}));
  SLUICE_RETURN_IF_ERROR(SumRows(rows, 1.0f / static_cast<float>(s.m), mean));
  SLUICE_ASSIGN_OR_RETURN(Tensor squares, Allocate(DType::kFloat32, Shape{s.m, s.c}));
  CUDA_RETURN_IF_ERROR(
      kernels::BatchNormCentredSquares(F(x), F(mean), F(squares), s.m, s.c, stream()));
  SLUICE_RETURN_IF_ERROR(SumRows(squares, 1.0f / static_cast<float>(s.m), variance));
  CUDA_RETURN_IF_ERROR(kernels::BatchNormNormalize(F(x), F(mean), F(variance), F(gamma), F(beta),
                                                   epsilon, F(y), s.m, s.c, stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::BatchNormForwardInference(const Tensor& x, const Tensor& gamma,
                                                    const Tensor& beta, const Tensor& mean,
                                                    const Tensor& variance, float epsilon,
                                                    Tensor& y) {
  SLUICE_ASSIGN_OR_RETURN(
      const KernelTimer::Scope timed,
      Enter("BatchNormForwardInference", {&x, &gamma, &beta, &mean, &variance, &y}));
  const BnShape s = BnShapeOf(x);
  CUDA_RETURN_IF_ERROR(kernels::BatchNormNormalize(F(x), F(mean), F(variance), F(gamma), F(beta),
                                                   epsilon, F(y), s.m, s.c, stream()));
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
  const BnShape s = BnShapeOf(x);
  if (s.c == 0) return absl::OkStatus();
  if (s.m == 0) {
    SLUICE_RETURN_IF_ERROR(Fill(grad_gamma, 0.0f));
    return Fill(grad_beta, 0.0f);
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor inv_std, Allocate(DType::kFloat32, Shape{s.c}));
  CUDA_RETURN_IF_ERROR(kernels::InvStd(F(variance), epsilon, F(inv_std), s.c, stream()));
  SLUICE_ASSIGN_OR_RETURN(const Tensor g_rows, grad_y.Reshape(Shape{s.m, s.c}));
  // grad_beta = sum g; grad_gamma = sum g xhat, xhat = (x - mean) inv_std.
  SLUICE_RETURN_IF_ERROR(SumRows(g_rows, 1.0f, grad_beta));
  SLUICE_ASSIGN_OR_RETURN(Tensor xhat_g, Allocate(DType::kFloat32, Shape{s.m, s.c}));
  if (statistics_are_constant) {
    // mean and variance are inputs: grad_x = g gamma inv_std, in the same pass as g xhat.
    CUDA_RETURN_IF_ERROR(kernels::BatchNormConstantBackward(
        F(x), F(grad_y), F(gamma), F(mean), F(inv_std), F(grad_x), F(xhat_g), s.m, s.c, stream()));
    return SumRows(xhat_g, 1.0f, grad_gamma);
  }
  CUDA_RETURN_IF_ERROR(kernels::BatchNormXhatGrad(F(x), F(grad_y), F(mean), F(inv_std), F(xhat_g),
                                                  s.m, s.c, stream()));
  SLUICE_RETURN_IF_ERROR(SumRows(xhat_g, 1.0f, grad_gamma));
  // Through the batch's statistics (for one row, x - mean is 0 whatever x is: grad_x is 0, as
  // the formula gives).
  CUDA_RETURN_IF_ERROR(kernels::BatchNormInputGrad(F(x), F(grad_y), F(gamma), F(mean), F(inv_std),
                                                   F(grad_gamma), F(grad_beta), F(grad_x), s.m, s.c,
                                                   stream()));
  return absl::OkStatus();
}

}  // namespace sluice::train::backend::cuda
