#include "ops/random_brightness.h"

#include <algorithm>

#include "core/status_macros.h"
#include "ops/counter_rng.h"

namespace sluice {

absl::StatusOr<RandomBrightness> RandomBrightness::Create(FactorRange factor,
                                                          const ValueRange& value_range) {
  SLUICE_RETURN_IF_ERROR(CheckFactorRange("RandomBrightness", "factor", factor, -1, 1));
  if (!(value_range.min < value_range.max)) {
    return absl::InvalidArgumentError("RandomBrightness: value_range must have min < max");
  }
  return RandomBrightness(factor, value_range);
}

absl::StatusOr<Tensor> RandomBrightness::Apply(const Tensor& images, uint64_t seed) const {
  SLUICE_ASSIGN_OR_RETURN(const ImageBatchShape s,
                          FloatImageBatchShape(images, "RandomBrightness"));
  CounterRng rng(seed, kRandomBrightnessStream);
  Tensor out(DType::kFloat32, images.shape());
  const double range = static_cast<double>(range_.max) - range_.min;
  for (int64_t b = 0; b < s.batch; ++b) {
    const float delta = static_cast<float>(rng.Uniform(factor_.lower, factor_.upper) * range);
    const float* src = images.data<float>() + b * s.image_size();
    float* dst = out.data<float>() + b * s.image_size();
    for (int64_t i = 0; i < s.image_size(); ++i) {
      dst[i] = std::clamp(src[i] + delta, range_.min, range_.max);
    }
  }
  return out;
}

}  // namespace sluice
