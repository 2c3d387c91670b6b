#ifndef SLUICE_OPS_RANDOM_BRIGHTNESS_H_
#define SLUICE_OPS_RANDOM_BRIGHTNESS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "ops/augmentation.h"

namespace sluice {

// keras.layers.RandomBrightness: each image gets a delta drawn from [lower, upper] x
// (value_max - value_min) added to every value, then clipped to value_range (Keras' default
// [0, 255]). Factors lie in [-1, 1]; one number f means [-f, f]. See ops/augmentation.h for
// batches and seeds.
class RandomBrightness {
 public:
  static absl::StatusOr<RandomBrightness> Create(FactorRange factor, const ValueRange& value_range);
  static absl::StatusOr<RandomBrightness> Create(FactorRange factor) {
    return Create(factor, ValueRange{});
  }
  static absl::StatusOr<RandomBrightness> Create(double factor,
                                                 const ValueRange& value_range = {}) {
    return Create(FactorRange::Symmetric(factor), value_range);
  }

  absl::StatusOr<Tensor> Apply(const Tensor& images, uint64_t seed) const;

 private:
  RandomBrightness(FactorRange factor, const ValueRange& value_range)
      : factor_(factor), range_(value_range) {}
  FactorRange factor_;
  ValueRange range_;
};

}  // namespace sluice

#endif  // SLUICE_OPS_RANDOM_BRIGHTNESS_H_
