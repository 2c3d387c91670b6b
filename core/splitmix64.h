#ifndef SLUICE_CORE_SPLITMIX64_H_
#define SLUICE_CORE_SPLITMIX64_H_

#include <cstdint>

#include "core/host_device.h"

namespace sluice {

// SplitMix64's increment (the golden ratio in 64 bits) and its finaliser: every input bit affects
// every output bit. The project's seed mixing and counter-based draws (CounterRng, Dropout's
// masks on the CPU and in CUDA, element seeds) are all built on it.
inline constexpr uint64_t kSplitMix64Golden = 0x9e3779b97f4a7c15ull;

SLUICE_HOST_DEVICE constexpr uint64_t SplitMix64Finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace sluice

#endif  // SLUICE_CORE_SPLITMIX64_H_
