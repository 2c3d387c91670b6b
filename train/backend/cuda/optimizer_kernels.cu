// Fused optimizer updates: one pass over many variables and their slots, in as few launches as
// the kernel's argument block allows (PyTorch's multi-tensor "foreach" updates). A model's
// update is then one kernel, or one node of a CUDA graph, instead of one per variable.

#include <climits>
#include <cmath>
#include <cstdint>

#include "train/backend/cuda/kernels.h"
#include "train/backend/cuda/launch_util.cuh"

namespace sluice::train::backend::cuda::kernels {
namespace {

// The variables of one launch, passed by value as the kernel's argument: no table to copy to
// the device, and a captured graph keeps its own copy. As many as fit in the 4 KB of arguments
// every CUDA version allows (resnet-20's 65 variables take one launch).
constexpr int kTensorsPerLaunch = 72;
constexpr int kChunk = kThreads * 8;  // the elements one block updates
struct LaunchArgs {
  float* w[kTensorsPerLaunch];
  const float* g[kTensorsPerLaunch];
  float* slots[3][kTensorsPerLaunch];
  int64_t n[kTensorsPerLaunch];
  int first_block[kTensorsPerLaunch + 1];  // variable t's blocks are [first_block[t], [t + 1])
  int count;
};
static_assert(sizeof(LaunchArgs) + sizeof(UpdateConstants) + sizeof(const float*) <= 4096,
              "a kernel's arguments are at most 4 KB");

// The step's scalars, read once by each thread before its elements.
struct StepValues {
  float rate, decay, gradient_coefficient, v_scale;
};

// Element i of one variable by rule K, as the CPU computes it (cpu_optimizer_kernels.cc), the
// decay (lr * weight_decay) applied to w first. s0..s2 are the variable's slots in
// optimizer_update.h's order.
template <UpdateKind K>
__device__ __forceinline__ void UpdateElement(const UpdateConstants& c, const StepValues& step,
                                              float* w, const float* g, float* s0, float* s1,
                                              float* s2, int64_t i) {
  const float rate = step.rate, decay = step.decay;
  const float gi = g[i];
  if constexpr (K == UpdateKind::kSgd) {
    float wi = w[i];
    if (decay != 0.0f) wi -= decay * wi;
    if (s0 == nullptr) {
      wi -= rate * gi;
    } else {
      const float vi = c.momentum * s0[i] - rate * gi;
      s0[i] = vi;
      wi += c.nesterov ? c.momentum * vi - rate * gi : vi;
    }
    w[i] = wi;
  } else if constexpr (K == UpdateKind::kAdam) {
    const float mi = s0[i] + (gi - s0[i]) * (1.0f - c.beta_1);
    const float vi = s1[i] + (gi * gi - s1[i]) * (1.0f - c.beta_2);
    s0[i] = mi;
    s1[i] = vi;
    const float wi = w[i] - decay * w[i];
    w[i] = wi - rate * mi / (sqrtf(vi) + c.epsilon);
  } else if constexpr (K == UpdateKind::kRmsprop) {
    // s0: velocity, s1: average gradient (centered), s2: momentum.
    const float vi = c.rho * s0[i] + (1.0f - c.rho) * (gi * gi);
    s0[i] = vi;
    float denominator = vi + c.epsilon;
    if (s1 != nullptr) {
      const float ai = c.rho * s1[i] + (1.0f - c.rho) * gi;
      s1[i] = ai;
      denominator = vi - ai * ai + c.epsilon;
    }
    const float delta = rate * gi / sqrtf(denominator);
    const float wi = w[i] - decay * w[i];
    if (s2 != nullptr) {
      const float bi = c.momentum * s2[i] + delta;
      s2[i] = bi;
      w[i] = wi - bi;
    } else {
      w[i] = wi - delta;
    }
  } else if constexpr (K == UpdateKind::kAdagrad) {
    const float ai = s0[i] + gi * gi;
    s0[i] = ai;
    w[i] = (w[i] - decay * w[i]) - rate * gi / sqrtf(ai + c.epsilon);
  } else if constexpr (K == UpdateKind::kAdadelta) {
    const float ag = c.rho * s0[i] + (1.0f - c.rho) * (gi * gi);
    s0[i] = ag;
    const float delta = -(sqrtf(s1[i] + c.epsilon) * gi) / sqrtf(ag + c.epsilon);
    s1[i] = c.rho * s1[i] + (1.0f - c.rho) * (delta * delta);
    w[i] = (w[i] - decay * w[i]) + rate * delta;
  } else if constexpr (K == UpdateKind::kAdamax) {
    const float mi = s0[i] + (gi - s0[i]) * (1.0f - c.beta_1);
    // Not fmaxf, which would drop a NaN gradient: the CPU keeps it.
    const float scaled = c.beta_2 * s1[i], magnitude = fabsf(gi);
    const float ui = scaled > magnitude ? scaled : magnitude;
    s0[i] = mi;
    s1[i] = ui;
    w[i] = (w[i] - decay * w[i]) - rate * mi / (ui + c.epsilon);
  } else {
    static_assert(K == UpdateKind::kNadam);
    const float cg = step.gradient_coefficient, v_scale = step.v_scale;
    const float mi = s0[i] + (gi - s0[i]) * (1.0f - c.beta_1);
    const float vi = s1[i] + (gi * gi - s1[i]) * (1.0f - c.beta_2);
    s0[i] = mi;
    s1[i] = vi;
    w[i] = (w[i] - decay * w[i]) - (rate * mi + cg * gi) / (sqrtf(v_scale * vi) + c.epsilon);
  }
}

template <UpdateKind K>
__global__ void UpdateKernel(const LaunchArgs args, const UpdateConstants c, const float* step) {
  const int block = static_cast<int>(blockIdx.x);
  int t = 0;
  while (t + 1 < args.count && args.first_block[t + 1] <= block) ++t;
  const int64_t begin = static_cast<int64_t>(block - args.first_block[t]) * kChunk;
  const int64_t end = begin + kChunk < args.n[t] ? begin + kChunk : args.n[t];
  float* const w = args.w[t];
  const float* const g = args.g[t];
  float* const s0 = args.slots[0][t];
  float* const s1 = args.slots[1][t];
  float* const s2 = args.slots[2][t];
  const StepValues values{step[kStepRate], step[kStepDecay], step[kStepGradientCoefficient],
                          step[kStepVScale]};
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    UpdateElement<K>(c, values, w, g, s0, s1, s2, i);
  }
}

template <UpdateKind K>
cudaError_t LaunchAll(const UpdateConstants& rule, const UpdateTensor* vars, int count,
                      const float* step, cudaStream_t stream) {
  LaunchArgs args{};
  int64_t blocks = 0;
  auto flush = [&]() -> cudaError_t {
    if (args.count == 0) return cudaSuccess;
    args.first_block[args.count] = static_cast<int>(blocks);
    UpdateKernel<K><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args, rule, step);
    args = LaunchArgs{};
    blocks = 0;
    return cudaGetLastError();
  };
  for (int i = 0; i < count; ++i) {
    const UpdateTensor& var = vars[i];
    if (var.n == 0) continue;
    const int64_t need = (var.n + kChunk - 1) / kChunk;
    // A grid of at most 2^31 - 1 blocks: 4 T elements a launch.
    if (need > INT32_MAX) return cudaErrorInvalidValue;
    if (args.count == kTensorsPerLaunch || blocks + need > INT32_MAX) {
      if (const cudaError_t e = flush(); e != cudaSuccess) return e;
    }
    const int t = args.count++;
    args.w[t] = var.w;
    args.g[t] = var.g;
    for (int j = 0; j < 3; ++j) args.slots[j][t] = var.slots[j];
    args.n[t] = var.n;
    args.first_block[t] = static_cast<int>(blocks);
    blocks += need;
  }
  return flush();
}

}  // namespace

cudaError_t OptimizerUpdate(const UpdateConstants& rule, const UpdateTensor* vars, int count,
                            const float* step, cudaStream_t stream) {
  switch (rule.kind) {
    case UpdateKind::kSgd:
      return LaunchAll<UpdateKind::kSgd>(rule, vars, count, step, stream);
    case UpdateKind::kAdam:
      return LaunchAll<UpdateKind::kAdam>(rule, vars, count, step, stream);
    case UpdateKind::kRmsprop:
      return LaunchAll<UpdateKind::kRmsprop>(rule, vars, count, step, stream);
    case UpdateKind::kAdagrad:
      return LaunchAll<UpdateKind::kAdagrad>(rule, vars, count, step, stream);
    case UpdateKind::kAdadelta:
      return LaunchAll<UpdateKind::kAdadelta>(rule, vars, count, step, stream);
    case UpdateKind::kAdamax:
      return LaunchAll<UpdateKind::kAdamax>(rule, vars, count, step, stream);
    case UpdateKind::kNadam:
      return LaunchAll<UpdateKind::kNadam>(rule, vars, count, step, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace sluice::train::backend::cuda::kernels
