#ifndef SLUICE_TRAIN_BACKEND_DROPOUT_DRAW_H_
#define SLUICE_TRAIN_BACKEND_DROPOUT_DRAW_H_

#include <cstdint>

#include "core/host_device.h"
#include "core/splitmix64.h"

// Dropout's random draw, shared by the CPU and CUDA kernels so that a seed drops the same
// elements on every device. Counter-based (SplitMix64's finaliser over (seed, index)): each
// element's draw depends on nothing else, so threads and SIMD lanes need no shared state.

namespace sluice::train::backend {

// The per-call key of `seed`.
SLUICE_HOST_DEVICE inline uint64_t DropoutKey(uint64_t seed) {
  return SplitMix64Finalize(seed + kSplitMix64Golden);
}

// Element i's uniform draw in [0, 1): a multiple of 2^-24, exact in float32.
SLUICE_HOST_DEVICE inline float DropoutUniform(uint64_t key, int64_t i) {
  const uint64_t bits = SplitMix64Finalize(key ^ (static_cast<uint64_t>(i) * kSplitMix64Golden));
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

}  // namespace sluice::train::backend

#endif  // SLUICE_TRAIN_BACKEND_DROPOUT_DRAW_H_
