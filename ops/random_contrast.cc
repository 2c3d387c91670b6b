#include "ops/random_contrast.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "ops/counter_rng.h"

namespace sluice {

absl::StatusOr<RandomContrast> RandomContrast::Create(FactorRange factor,
                                                      const ValueRange& value_range) {
  if (!(factor.lower >= 0 && factor.lower <= 1 && factor.upper >= 0 && factor.upper <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("RandomContrast: factor's lower and upper must be in [0, 1], got ",
                     factor.lower, " and ", factor.upper));
  }
  if (!(value_range.min < value_range.max)) {
    return absl::InvalidArgumentError("RandomContrast: value_range must have min < max");
  }
  return RandomContrast(factor, value_range);
}

absl::StatusOr<Tensor> RandomContrast::Apply(const Tensor& images, uint64_t seed) const {
  SLUICE_ASSIGN_OR_RETURN(const ImageBatchShape s, FloatImageBatchShape(images, "RandomContrast"));
  CounterRng rng(seed, kRandomContrastStream);
  Tensor out(DType::kFloat32, images.shape());
  const int64_t pixels = s.height * s.width;
  std::vector<double> mean(static_cast<size_t>(s.channels));
  for (int64_t b = 0; b < s.batch; ++b) {
    const float factor = static_cast<float>(rng.Uniform(1 - factor_.lower, 1 + factor_.upper));
    const float* src = images.data<float>() + b * s.image_size();
    float* dst = out.data<float>() + b * s.image_size();
    std::fill(mean.begin(), mean.end(), 0.0);
    for (int64_t p = 0; p < pixels; ++p) {
      for (int64_t c = 0; c < s.channels; ++c) mean[c] += src[p * s.channels + c];
    }
    for (double& m : mean) m /= static_cast<double>(std::max<int64_t>(pixels, 1));
    for (int64_t p = 0; p < pixels; ++p) {
      for (int64_t c = 0; c < s.channels; ++c) {
        const float m = static_cast<float>(mean[c]);
        const float v = (src[p * s.channels + c] - m) * factor + m;
        dst[p * s.channels + c] = std::clamp(v, range_.min, range_.max);
      }
    }
  }
  return out;
}

}  // namespace sluice
