// Fused optimizer updates: one pass over the variable and its slots.

#include <cmath>

#include "train/backend/cuda/kernels.h"
#include "train/backend/cuda/launch_util.cuh"

namespace sluice::train::backend::cuda::kernels {
namespace {

__global__ void SgdKernel(float* w, const float* g, float* v, int64_t n, const float* step,
                          float mu, bool nesterov) {
  const float lr = step[kStepRate], decay = step[kStepDecay];
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    float wi = w[i];
    if (decay != 0.0f) wi -= decay * wi;  // decoupled decay first, as on the CPU
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

__global__ void AdamKernel(float* w, const float* g, float* m, float* v, int64_t n,
                           const float* step, float b1, float b2, float eps) {
  const float alpha = step[kStepRate], decay = step[kStepDecay];
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

// The Keras optimizers of backend.h, each as the CPU computes it (cpu_optimizer_kernels.cc);
// decay = lr * weight_decay, applied to w first.
__global__ void RmspropKernel(float* w, const float* g, float* v, float* a, float* b, int64_t n,
                              const float* step, float rho, float mu, float eps) {
  const float lr = step[kStepRate], decay = step[kStepDecay];
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const float gi = g[i];
    const float vi = rho * v[i] + (1.0f - rho) * (gi * gi);
    v[i] = vi;
    float denominator = vi + eps;
    if (a != nullptr) {
      const float ai = rho * a[i] + (1.0f - rho) * gi;
      a[i] = ai;
      denominator = vi - ai * ai + eps;
    }
    const float delta = lr * gi / sqrtf(denominator);
    const float wi = w[i] - decay * w[i];
    if (b != nullptr) {
      const float bi = mu * b[i] + delta;
      b[i] = bi;
      w[i] = wi - bi;
    } else {
      w[i] = wi - delta;
    }
  }
}

__global__ void AdagradKernel(float* w, const float* g, float* acc, int64_t n, const float* step,
                              float eps) {
  const float lr = step[kStepRate], decay = step[kStepDecay];
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const float gi = g[i];
    const float ai = acc[i] + gi * gi;
    acc[i] = ai;
    w[i] = (w[i] - decay * w[i]) - lr * gi / sqrtf(ai + eps);
  }
}

__global__ void AdadeltaKernel(float* w, const float* g, float* acc_g, float* acc_d, int64_t n,
                               const float* step, float rho, float eps) {
  const float lr = step[kStepRate], decay = step[kStepDecay];
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const float gi = g[i];
    const float ag = rho * acc_g[i] + (1.0f - rho) * (gi * gi);
    acc_g[i] = ag;
    const float delta = -(sqrtf(acc_d[i] + eps) * gi) / sqrtf(ag + eps);
    acc_d[i] = rho * acc_d[i] + (1.0f - rho) * (delta * delta);
    w[i] = (w[i] - decay * w[i]) + lr * delta;
  }
}

__global__ void AdamaxKernel(float* w, const float* g, float* m, float* u, int64_t n,
                             const float* step, float b1, float b2, float eps) {
  const float alpha = step[kStepRate], decay = step[kStepDecay];
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const float gi = g[i];
    const float mi = m[i] + (gi - m[i]) * (1.0f - b1);
    // Not fmaxf, which would drop a NaN gradient: the CPU keeps it.
    const float scaled = b2 * u[i], magnitude = fabsf(gi);
    const float ui = scaled > magnitude ? scaled : magnitude;
    m[i] = mi;
    u[i] = ui;
    w[i] = (w[i] - decay * w[i]) - alpha * mi / (ui + eps);
  }
}

__global__ void NadamKernel(float* w, const float* g, float* m, float* v, int64_t n,
                            const float* step, float b1, float b2, float eps) {
  const float cm = step[kStepRate], decay = step[kStepDecay];
  const float cg = step[kStepGradientCoefficient], v_scale = step[kStepVScale];
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const float gi = g[i];
    const float mi = m[i] + (gi - m[i]) * (1.0f - b1);
    const float vi = v[i] + (gi * gi - v[i]) * (1.0f - b2);
    m[i] = mi;
    v[i] = vi;
    w[i] = (w[i] - decay * w[i]) - (cm * mi + cg * gi) / (sqrtf(v_scale * vi) + eps);
  }
}

}  // namespace

cudaError_t SgdUpdate(float* w, const float* g, float* velocity, int64_t n, const float* step,
                      float momentum, bool nesterov, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  SgdKernel<<<GridFor(n), kThreads, 0, stream>>>(w, g, velocity, n, step, momentum, nesterov);
  return cudaGetLastError();
}

cudaError_t AdamUpdate(float* w, const float* g, float* m, float* v, int64_t n, const float* step,
                       float beta_1, float beta_2, float epsilon, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AdamKernel<<<GridFor(n), kThreads, 0, stream>>>(w, g, m, v, n, step, beta_1, beta_2, epsilon);
  return cudaGetLastError();
}

cudaError_t RmspropUpdate(float* w, const float* g, float* velocity, float* average_gradient,
                          float* momentum_slot, int64_t n, const float* step, float rho,
                          float momentum, float epsilon, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  RmspropKernel<<<GridFor(n), kThreads, 0, stream>>>(w, g, velocity, average_gradient,
                                                     momentum_slot, n, step, rho, momentum,
                                                     epsilon);
  return cudaGetLastError();
}

cudaError_t AdagradUpdate(float* w, const float* g, float* accumulator, int64_t n,
                          const float* step, float epsilon, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AdagradKernel<<<GridFor(n), kThreads, 0, stream>>>(w, g, accumulator, n, step, epsilon);
  return cudaGetLastError();
}

cudaError_t AdadeltaUpdate(float* w, const float* g, float* accumulated_grad,
                           float* accumulated_delta, int64_t n, const float* step, float rho,
                           float epsilon, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AdadeltaKernel<<<GridFor(n), kThreads, 0, stream>>>(w, g, accumulated_grad, accumulated_delta, n,
                                                      step, rho, epsilon);
  return cudaGetLastError();
}

cudaError_t AdamaxUpdate(float* w, const float* g, float* m, float* u, int64_t n,
                         const float* step, float beta_1, float beta_2, float epsilon,
                         cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AdamaxKernel<<<GridFor(n), kThreads, 0, stream>>>(w, g, m, u, n, step, beta_1, beta_2, epsilon);
  return cudaGetLastError();
}

cudaError_t NadamUpdate(float* w, const float* g, float* m, float* v, int64_t n,
                        const float* step, float beta_1, float beta_2, float epsilon,
                        cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  NadamKernel<<<GridFor(n), kThreads, 0, stream>>>(w, g, m, v, n, step, beta_1, beta_2, epsilon);
  return cudaGetLastError();
}

}  // namespace sluice::train::backend::cuda::kernels
