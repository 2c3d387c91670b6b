// Fused optimizer updates: one pass over the variable and its slots.

#include <cmath>

#include "train/backend/cuda/kernels.h"
#include "train/backend/cuda/launch_util.cuh"

namespace sluice::train::backend::cuda::kernels {
namespace {

__global__ void SgdKernel(float* w, const float* g, float* v, int64_t n, float lr, float mu,
                          bool nesterov, float decay) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    float wi = w[i];
    if (decay != 0.0f) wi -= lr * decay * wi;  // decoupled decay first, as on the CPU
    const float gi = g[i];
    if (v == nullptr) {
      wi -= lr * gi;
    } else {
      const float vi = mu * v[i] - lr * gi;
      v[i] = vi;
      wi += nesterov ? mu * vi - lr * gi : vi;
    }
    w[i] = wi;
  }
}

__global__ void AdamKernel(float* w, const float* g, float* m, float* v, int64_t n, float alpha,
                           float b1, float b2, float eps, float decay) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const float gi = g[i];
    const float mi = m[i] + (gi - m[i]) * (1.0f - b1);
    const float vi = v[i] + (gi * gi - v[i]) * (1.0f - b2);
    m[i] = mi;
    v[i] = vi;
    const float wi = w[i] - decay * w[i];
    w[i] = wi - alpha * mi / (sqrtf(vi) + eps);
  }
}

}  // namespace

cudaError_t SgdUpdate(float* w, const float* g, float* velocity, int64_t n, float lr,
                      float momentum, bool nesterov, float weight_decay, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  SgdKernel<<<GridFor(n), kThreads, 0, stream>>>(w, g, velocity, n, lr, momentum, nesterov,
                                                 weight_decay);
  return cudaGetLastError();
}

cudaError_t AdamUpdate(float* w, const float* g, float* m, float* v, int64_t n, float alpha,
                       float beta_1, float beta_2, float epsilon, float decay,
                       cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AdamKernel<<<GridFor(n), kThreads, 0, stream>>>(w, g, m, v, n, alpha, beta_1, beta_2, epsilon,
                                                  decay);
  return cudaGetLastError();
}

}  // namespace sluice::train::backend::cuda::kernels
