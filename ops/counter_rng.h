#ifndef SLUICE_OPS_COUNTER_RNG_H_
#define SLUICE_OPS_COUNTER_RNG_H_

#include <cstdint>

#include "core/splitmix64.h"

namespace sluice {

// A small counter-based random generator for per-element augmentation: the i-th number of stream
// `stream` under `seed` is a pure function of (seed, stream, i), so the same element seed gives the
// same crop and flip whatever thread or order the elements are processed in. Each random op uses
// its own stream constant, so that one element seed handed to several ops (crop, then flip) does
// not make their decisions correlated. The mixing function is SplitMix64's finaliser, applied to a
// Weyl sequence as SplitMix64 itself does: statistically good enough for augmentation, not for
// cryptography.
class CounterRng {
 public:
  CounterRng(uint64_t seed, uint64_t stream) : key_(Mix(seed ^ Mix(stream + kGolden))) {}

  // The next 64 random bits.
  uint64_t Next() {
    ++counter_;
    return Mix(key_ + counter_ * kGolden);
  }
  // Uniform in [0, 1), with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in [lo, hi).
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [0, n) for n >= 1 (the modulo bias is below n / 2^64).
  uint64_t UniformInt(uint64_t n) { return Next() % n; }

  static uint64_t Mix(uint64_t z) { return SplitMix64Finalize(z); }

 private:
  static constexpr uint64_t kGolden = kSplitMix64Golden;
  uint64_t key_;
  uint64_t counter_ = 0;
};

// Stream constants of the random ops (any distinct values).
inline constexpr uint64_t kRandomResizedCropStream = 0x52524331;  // "RRC1"
inline constexpr uint64_t kRandomFlipStream = 0x464c4950;         // "FLIP"
inline constexpr uint64_t kFileOrderStream = 0x46494c45;          // "FILE"
inline constexpr uint64_t kRandomRotationStream = 0x524f5441;     // "ROTA"
inline constexpr uint64_t kRandomZoomStream = 0x5a4f4f4d;         // "ZOOM"
inline constexpr uint64_t kRandomTranslationStream = 0x5452414e;  // "TRAN"
inline constexpr uint64_t kRandomFlipBatchStream = 0x464c4950 + 1;
inline constexpr uint64_t kRandomContrastStream = 0x434f4e54;    // "CONT"
inline constexpr uint64_t kRandomBrightnessStream = 0x42524954;  // "BRIT"

}  // namespace sluice

#endif  // SLUICE_OPS_COUNTER_RNG_H_
