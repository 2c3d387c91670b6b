#ifndef SLUICE_TRAIN_LAYERS_LAYER_SEED_H_
#define SLUICE_TRAIN_LAYERS_LAYER_SEED_H_

#include <cstdint>
#include <optional>

namespace sluice::train::layers {

// The seed of a layer made without one (Dense(64), Dropout(0.5f)): the next of a process-wide
// sequence, as Keras draws each unseeded layer's from its global generator, so that two layers of
// one model never start with equal weights (two Dense(16) branches joined by Add would stay equal
// for the whole run) nor draw equal dropout masks. The sequence is deterministic: a program that
// makes its layers in the same order gets the same seeds. A layer's config keeps the seed it got,
// so a saved and loaded layer draws as the original did. Thread-safe.
uint64_t NextLayerSeed();
// `seed` itself, or the next of the sequence when it is unset.
inline uint64_t ResolveLayerSeed(std::optional<uint64_t> seed) {
  return seed ? *seed : NextLayerSeed();
}
// Restarts the sequence from `seed` (keras.utils.set_random_seed): the layers made after it get
// the same seeds as after any other SetRandomSeed(seed).
void SetRandomSeed(uint64_t seed);

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_LAYER_SEED_H_
