#include "train/layers/layer_seed.h"

#include "core/mutex.h"
#include "core/splitmix64.h"

namespace sluice::train::layers {
namespace {

struct Sequence {
  Mutex mu;
  uint64_t base ABSL_GUARDED_BY(mu) = 0;
  uint64_t drawn ABSL_GUARDED_BY(mu) = 0;
};

Sequence& TheSequence() {
  static Sequence* sequence = new Sequence();  // never destroyed: layers may outlive main
  return *sequence;
}

}  // namespace

uint64_t NextLayerSeed() {
  Sequence& s = TheSequence();
  MutexLock lock(&s.mu);
  // splitmix64: consecutive counts give unrelated seeds, none of them near another's seed + 1
  // (a kernel layer's bias draws from seed + 1).
  ++s.drawn;
  return SplitMix64Finalize(s.base + s.drawn * kSplitMix64Golden);
}

void SetRandomSeed(uint64_t seed) {
  Sequence& s = TheSequence();
  MutexLock lock(&s.mu);
  s.base = seed;
  s.drawn = 0;
}

}  // namespace sluice::train::layers
