#ifndef SLUICE_OPS_AUGMENTATION_H_
#define SLUICE_OPS_AUGMENTATION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice {

// What the Keras-style augmentation ops (RandomFlip, RandomRotation, RandomZoom,
// RandomTranslation, RandomContrast, RandomBrightness) share.
//
// They run in the pipeline, on a float32 batch [B, H, W, C] (or one [H, W, C] image), inside a
// Map that hands them its per-element seed:
//
//   auto rotate = *RandomRotation::Create(0.1);
//   ds = ds.Map([rotate](Element e, const ElementContext& c) -> absl::StatusOr<Element> {
//     SLUICE_ASSIGN_OR_RETURN(e[0], rotate.Apply(e[0], c.seed));
//     return e;
//   });
//
// Each image of a batch gets its own draw; the draws are a pure function of the seed, so a
// pipeline with a seed augments the same way in every run, whatever its parallelism, and
// differently in every epoch (ElementContext::seed changes with the repetition).

// A draw range, as Keras reads a `factor` argument: one value f means [-f, f]; two values are
// [lower, upper].
struct FactorRange {
  double lower = 0;
  double upper = 0;
  static FactorRange Symmetric(double factor) { return {-factor, factor}; }
};

// The range of the values (Keras' value_range) that RandomContrast and RandomBrightness clip
// their results to: [0, 255] for images as decoded, [0, 1] after Rescaling(1/255).
struct ValueRange {
  float min = 0.0f;
  float max = 255.0f;
};

// The batch and image dimensions of a float32 [B, H, W, C] or [H, W, C] tensor (B = 1 for the
// latter); InvalidArgument naming `op` otherwise.
struct ImageBatchShape {
  int64_t batch = 0, height = 0, width = 0, channels = 0;
  int64_t image_size() const { return height * width * channels; }
};
absl::StatusOr<ImageBatchShape> FloatImageBatchShape(const Tensor& images, const char* op);

// InvalidArgument naming `op` and `what` unless lower <= upper and both lie in [min, max].
absl::Status CheckFactorRange(const char* op, const char* what, const FactorRange& range,
                              double min, double max);

}  // namespace sluice

#endif  // SLUICE_OPS_AUGMENTATION_H_
