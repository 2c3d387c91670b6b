#include "ops/random_translation.h"

#include <vector>

#include "core/status_macros.h"
#include "ops/counter_rng.h"

namespace sluice {

absl::StatusOr<RandomTranslation> RandomTranslation::Create(FactorRange height_factor,
                                                            FactorRange width_factor,
                                                            const ImageTransformOptions& options) {
  SLUICE_RETURN_IF_ERROR(
      CheckFactorRange("RandomTranslation", "height_factor", height_factor, -1, 1));
  SLUICE_RETURN_IF_ERROR(
      CheckFactorRange("RandomTranslation", "width_factor", width_factor, -1, 1));
  return RandomTranslation(height_factor, width_factor, options);
}

absl::StatusOr<Tensor> RandomTranslation::Apply(const Tensor& images, uint64_t seed) const {
  SLUICE_ASSIGN_OR_RETURN(const ImageBatchShape s,
                          FloatImageBatchShape(images, "RandomTranslation"));
  CounterRng rng(seed, kRandomTranslationStream);
  std::vector<ProjectiveTransform> transforms;
  for (int64_t i = 0; i < s.batch; ++i) {
    const double dy = rng.Uniform(height_.lower, height_.upper) * static_cast<double>(s.height);
    const double dx = rng.Uniform(width_.lower, width_.upper) * static_cast<double>(s.width);
    transforms.push_back(TranslationTransform(dy, dx));
  }
  return ImageProjectiveTransform(images, transforms, options_);
}

}  // namespace sluice
