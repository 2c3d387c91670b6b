#include "ops/random_flip.h"

#include <cstring>

#include "core/status_macros.h"
#include "ops/counter_rng.h"

namespace sluice {

absl::StatusOr<Tensor> RandomFlip::Apply(const Tensor& images, uint64_t seed) const {
  SLUICE_ASSIGN_OR_RETURN(const ImageBatchShape s, FloatImageBatchShape(images, "RandomFlip"));
  CounterRng rng(seed, kRandomFlipBatchStream);
  Tensor out(DType::kFloat32, images.shape());
  const int64_t row = s.width * s.channels;
  for (int64_t b = 0; b < s.batch; ++b) {
    // One draw per image, as Keras 3: in kHorizontalAndVertical it flips both axes or neither.
    const bool flip = rng.UniformInt(2) == 1;
    const bool horizontal = mode_ != Mode::kVertical && flip;
    const bool vertical = mode_ != Mode::kHorizontal && flip;
    const float* src = images.data<float>() + b * s.image_size();
    float* dst = out.data<float>() + b * s.image_size();
    for (int64_t y = 0; y < s.height; ++y) {
      const float* in = src + (vertical ? s.height - 1 - y : y) * row;
      float* o = dst + y * row;
      if (!horizontal) {
        std::memcpy(o, in, static_cast<size_t>(row) * sizeof(float));
        continue;
      }
      for (int64_t x = 0; x < s.width; ++x) {
        std::memcpy(o + x * s.channels, in + (s.width - 1 - x) * s.channels,
                    static_cast<size_t>(s.channels) * sizeof(float));
      }
    }
  }
  return out;
}

}  // namespace sluice
