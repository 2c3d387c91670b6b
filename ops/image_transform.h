#ifndef SLUICE_OPS_IMAGE_TRANSFORM_H_
#define SLUICE_OPS_IMAGE_TRANSFORM_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace sluice {

// How a transform samples points outside the image: tf.raw_ops.ImageProjectiveTransformV3's fill
// modes, which Keras' RandomRotation, RandomZoom and RandomTranslation use.
enum class FillMode {
  kReflect,   // (d c b a | a b c d | d c b a): reflected about the edge of the last pixel
  kWrap,      // (a b c d | a b c d | a b c d)
  kConstant,  // (k k k k | a b c d | k k k k): fill_value
  kNearest,   // (a a a a | a b c d | d d d d)
};
enum class Interpolation { kNearest, kBilinear };

// A projective transform [a0, a1, a2, b0, b1, b2, c0, c1]: output pixel (x, y) samples the input
// at ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k) with k = c0 x + c1 y + 1, pixel centres at
// whole coordinates: tf.raw_ops.ImageProjectiveTransformV3's convention (output to input).
using ProjectiveTransform = std::array<double, 8>;

struct ImageTransformOptions {
  FillMode fill_mode = FillMode::kReflect;
  Interpolation interpolation = Interpolation::kBilinear;
  float fill_value = 0.0f;  // kConstant's value (and where k is 0)
};

// Applies transforms[i] to image i of a float32 [batch, height, width, channels] tensor (or the
// single transform to a [height, width, channels] image), with TensorFlow's arithmetic: a point
// outside the image is first mapped back by the fill mode, then read by the interpolation, and a
// neighbour still outside (kConstant) reads fill_value. InvalidArgument for another dtype or rank,
// or a transform count that is not the batch's.
absl::StatusOr<Tensor> ImageProjectiveTransform(const Tensor& images,
                                                absl::Span<const ProjectiveTransform> transforms,
                                                const ImageTransformOptions& options = {});

// The transforms Keras builds (keras.layers.preprocessing.image_preprocessing), for an image of
// height x width:
// a rotation by `angle` radians, counter-clockwise for a positive angle, about the image centre;
ProjectiveTransform RotationTransform(double angle, int64_t height, int64_t width);
// a zoom about the centre: the output samples zoom_x (zoom_y) input pixels per output pixel, so a
// factor above 1 zooms out and below 1 zooms in;
ProjectiveTransform ZoomTransform(double zoom_y, double zoom_x, int64_t height, int64_t width);
// a translation: the content moves down by dy and right by dx pixels.
ProjectiveTransform TranslationTransform(double dy, double dx);

}  // namespace sluice

#endif  // SLUICE_OPS_IMAGE_TRANSFORM_H_
