#ifndef SLUICE_OPS_RANDOM_TRANSLATION_H_
#define SLUICE_OPS_RANDOM_TRANSLATION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "ops/augmentation.h"
#include "ops/image_transform.h"

namespace sluice {

// keras.layers.RandomTranslation: each image moves down by a draw from height_factor x its
// height and right by a draw from width_factor x its width (factors in [-1, 1]; negative moves up
// or left), the uncovered part filled by `options.fill_mode`. See ops/augmentation.h for batches
// and seeds.
class RandomTranslation {
 public:
  static absl::StatusOr<RandomTranslation> Create(FactorRange height_factor,
                                                  FactorRange width_factor,
                                                  const ImageTransformOptions& options = {});
  // Keras' RandomTranslation(height_factor, width_factor): each [-factor, factor].
  static absl::StatusOr<RandomTranslation> Create(double height_factor, double width_factor,
                                                  const ImageTransformOptions& options = {}) {
    return Create(FactorRange::Symmetric(height_factor), FactorRange::Symmetric(width_factor),
                  options);
  }

  absl::StatusOr<Tensor> Apply(const Tensor& images, uint64_t seed) const;

 private:
  RandomTranslation(FactorRange height, FactorRange width, const ImageTransformOptions& options)
      : height_(height), width_(width), options_(options) {}
  FactorRange height_, width_;
  ImageTransformOptions options_;
};

}  // namespace sluice

#endif  // SLUICE_OPS_RANDOM_TRANSLATION_H_
