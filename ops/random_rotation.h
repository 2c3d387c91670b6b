#ifndef SLUICE_OPS_RANDOM_ROTATION_H_
#define SLUICE_OPS_RANDOM_ROTATION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "ops/augmentation.h"
#include "ops/image_transform.h"

namespace sluice {

// keras.layers.RandomRotation: each image turns about its centre by an angle drawn uniformly
// from [lower, upper] x 2 pi (the factor is a fraction of a full turn; positive is
// counter-clockwise), points outside filled by `options.fill_mode` (reflect by default). See
// ops/augmentation.h for batches and seeds.
class RandomRotation {
 public:
  static absl::StatusOr<RandomRotation> Create(FactorRange factor,
                                               const ImageTransformOptions& options = {});
  // Keras' RandomRotation(factor): [-factor, factor].
  static absl::StatusOr<RandomRotation> Create(double factor,
                                               const ImageTransformOptions& options = {}) {
    return Create(FactorRange::Symmetric(factor), options);
  }

  absl::StatusOr<Tensor> Apply(const Tensor& images, uint64_t seed) const;

 private:
  RandomRotation(FactorRange factor, const ImageTransformOptions& options)
      : factor_(factor), options_(options) {}
  FactorRange factor_;
  ImageTransformOptions options_;
};

}  // namespace sluice

#endif  // SLUICE_OPS_RANDOM_ROTATION_H_
