#include "ops/random_zoom.h"

#include <vector>

#include "core/status_macros.h"
#include "ops/counter_rng.h"

namespace sluice {

absl::StatusOr<RandomZoom> RandomZoom::Create(FactorRange height_factor,
                                              std::optional<FactorRange> width_factor,
                                              const ImageTransformOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckFactorRange("RandomZoom", "height_factor", height_factor, -1, 1e6));
  if (width_factor.has_value()) {
    SLUICE_RETURN_IF_ERROR(CheckFactorRange("RandomZoom", "width_factor", *width_factor, -1, 1e6));
  }
  return RandomZoom(height_factor, width_factor, options);
}

absl::StatusOr<Tensor> RandomZoom::Apply(const Tensor& images, uint64_t seed) const {
  SLUICE_ASSIGN_OR_RETURN(const ImageBatchShape s, FloatImageBatchShape(images, "RandomZoom"));
  CounterRng rng(seed, kRandomZoomStream);
  std::vector<ProjectiveTransform> transforms;
  for (int64_t i = 0; i < s.batch; ++i) {
    const double zoom_y = 1 + rng.Uniform(height_.lower, height_.upper);
    const double zoom_x =
        width_.has_value() ? 1 + rng.Uniform(width_->lower, width_->upper) : zoom_y;
    transforms.push_back(ZoomTransform(zoom_y, zoom_x, s.height, s.width));
  }
  return ImageProjectiveTransform(images, transforms, options_);
}

}  // namespace sluice
