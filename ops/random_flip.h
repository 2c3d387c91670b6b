#ifndef SLUICE_OPS_RANDOM_FLIP_H_
#define SLUICE_OPS_RANDOM_FLIP_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "ops/augmentation.h"

namespace sluice {

// keras.layers.RandomFlip: each image is mirrored left to right, top to bottom, or (for
// kHorizontalAndVertical, Keras' default) both, with probability 1/2: one draw per image, as
// Keras 3 (tf.keras 2 drew the two axes apart). See ops/augmentation.h for batches and seeds.
class RandomFlip {
 public:
  enum class Mode { kHorizontal, kVertical, kHorizontalAndVertical };

  explicit RandomFlip(Mode mode = Mode::kHorizontalAndVertical) : mode_(mode) {}

  absl::StatusOr<Tensor> Apply(const Tensor& images, uint64_t seed) const;

 private:
  Mode mode_;
};

}  // namespace sluice

#endif  // SLUICE_OPS_RANDOM_FLIP_H_
