#ifndef SLUICE_TRAIN_BACKEND_DROPOUT_DRAW_H_
#define SLUICE_TRAIN_BACKEND_DROPOUT_DRAW_H_

#include <cstdint>

// Dropout's random draw, shared by the CPU and CUDA kernels so that a seed drops the same
// elements on every device. Counter-based (SplitMix64's finaliser over (seed, index)): each
// element's draw depends on nothing else, so threads and SIMD lanes need no shared state.

#if defined(__CUDACC__)
#define SLUICE_DROPOUT_HD __host__ __device__
#else
#define SLUICE_DROPOUT_HD
#endif

namespace sluice::train::backend {

SLUICE_DROPOUT_HD inline uint64_t DropoutMix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The per-call key of `seed`.
SLUICE_DROPOUT_HD inline uint64_t DropoutKey(uint64_t seed) {
  return DropoutMix(seed + 0x9e3779b97f4a7c15ull);
}

// Element i's uniform draw in [0, 1): a multiple of 2^-24, exact in float32.
SLUICE_DROPOUT_HD inline float DropoutUniform(uint64_t key, int64_t i) {
  const uint64_t bits = DropoutMix(key ^ (static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull));
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

}  // namespace sluice::train::backend

#undef SLUICE_DROPOUT_HD

#endif  // SLUICE_TRAIN_BACKEND_DROPOUT_DRAW_H_
