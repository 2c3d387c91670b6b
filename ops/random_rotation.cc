#include "ops/random_rotation.h"

#include <numbers>
#include <vector>

#include "core/status_macros.h"
#include "ops/counter_rng.h"

namespace sluice {

absl::StatusOr<RandomRotation> RandomRotation::Create(FactorRange factor,
                                                      const ImageTransformOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckFactorRange("RandomRotation", "factor", factor, -1e6, 1e6));
  return RandomRotation(factor, options);
}

absl::StatusOr<Tensor> RandomRotation::Apply(const Tensor& images, uint64_t seed) const {
  SLUICE_ASSIGN_OR_RETURN(const ImageBatchShape s, FloatImageBatchShape(images, "RandomRotation"));
  CounterRng rng(seed, kRandomRotationStream);
  std::vector<ProjectiveTransform> transforms;
  for (int64_t i = 0; i < s.batch; ++i) {
    const double turns = rng.Uniform(factor_.lower, factor_.upper);
    transforms.push_back(RotationTransform(turns * 2 * std::numbers::pi, s.height, s.width));
  }
  return ImageProjectiveTransform(images, transforms, options_);
}

}  // namespace sluice
