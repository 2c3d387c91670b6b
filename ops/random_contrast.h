#ifndef SLUICE_OPS_RANDOM_CONTRAST_H_
#define SLUICE_OPS_RANDOM_CONTRAST_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "ops/augmentation.h"

namespace sluice {

// keras.layers.RandomContrast: each image's contrast is scaled by a factor drawn from
// [1 - lower, 1 + upper]: every channel becomes (x - mean) * factor + mean, the mean over that
// image's pixels in that channel (tf.image.adjust_contrast), then clipped to value_range. As in
// Keras, one number f means lower = upper = f, and both lie in [0, 1]. See ops/augmentation.h for
// batches and seeds.
class RandomContrast {
 public:
  static absl::StatusOr<RandomContrast> Create(FactorRange factor, const ValueRange& value_range);
  static absl::StatusOr<RandomContrast> Create(FactorRange factor) {
    return Create(factor, ValueRange{});
  }
  // Keras' RandomContrast(factor): [1 - factor, 1 + factor].
  static absl::StatusOr<RandomContrast> Create(double factor, const ValueRange& value_range = {}) {
    return Create(FactorRange{factor, factor}, value_range);
  }

  absl::StatusOr<Tensor> Apply(const Tensor& images, uint64_t seed) const;

 private:
  RandomContrast(FactorRange factor, const ValueRange& value_range)
      : factor_(factor), range_(value_range) {}
  FactorRange factor_;  // lower and upper, both >= 0, as Keras stores them
  ValueRange range_;
};

}  // namespace sluice

#endif  // SLUICE_OPS_RANDOM_CONTRAST_H_
