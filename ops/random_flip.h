#ifndef SLUICE_OPS_RANDOM_FLIP_H_
#define SLUICE_OPS_RANDOM_FLIP_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "ops/augmentation.h"

namespace sluice {

// keras.layers.RandomFlip: each image is mirrored left to right and/or top to bottom, each with
// probability 1/2 (two independent draws for kHorizontalAndVertical, Keras' default). See
// ops/augmentation.h for batches and seeds.
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
