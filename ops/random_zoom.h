#ifndef SLUICE_OPS_RANDOM_ZOOM_H_
#define SLUICE_OPS_RANDOM_ZOOM_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "ops/augmentation.h"
#include "ops/image_transform.h"

namespace sluice {

// keras.layers.RandomZoom: each image is zoomed about its centre by 1 + a draw from
// height_factor (and from width_factor, or the same draw when it is unset, keeping the aspect
// ratio). As in Keras, a positive factor zooms out (the image shrinks inside the frame) and a
// negative one zooms in; factors are at least -1. Points outside are filled by
// `options.fill_mode`. See ops/augmentation.h for batches and seeds.
class RandomZoom {
 public:
  static absl::StatusOr<RandomZoom> Create(FactorRange height_factor,
                                           std::optional<FactorRange> width_factor = std::nullopt,
                                           const ImageTransformOptions& options = {});
  // Keras' RandomZoom(height_factor): [-height_factor, height_factor], aspect ratio kept.
  static absl::StatusOr<RandomZoom> Create(double height_factor,
                                           const ImageTransformOptions& options = {}) {
    return Create(FactorRange::Symmetric(height_factor), std::nullopt, options);
  }

  absl::StatusOr<Tensor> Apply(const Tensor& images, uint64_t seed) const;

 private:
  RandomZoom(FactorRange height, std::optional<FactorRange> width,
             const ImageTransformOptions& options)
      : height_(height), width_(width), options_(options) {}
  FactorRange height_;
  std::optional<FactorRange> width_;
  ImageTransformOptions options_;
};

}  // namespace sluice

#endif  // SLUICE_OPS_RANDOM_ZOOM_H_
