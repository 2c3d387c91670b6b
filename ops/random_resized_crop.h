#ifndef SLUICE_OPS_RANDOM_RESIZED_CROP_H_
#define SLUICE_OPS_RANDOM_RESIZED_CROP_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "ops/crop.h"
#include "ops/resize.h"

namespace sluice {

// The Inception-style augmentation of torchvision.transforms.RandomResizedCrop (and
// tf.image.sample_distorted_bounding_box as used for ImageNet training).
struct RandomResizedCropOptions {
  // Fraction of the image area the window covers, uniform in [min_area, max_area].
  double min_area = 0.08;
  double max_area = 1.0;
  // Window width / height, log-uniform in [min_aspect_ratio, max_aspect_ratio].
  double min_aspect_ratio = 3.0 / 4.0;
  double max_aspect_ratio = 4.0 / 3.0;
  // Tries before falling back to a centre crop.
  int max_attempts = 10;
  // Channels of the result: 3 (RGB, grayscale JPEGs are expanded), 1, or 0 (as encoded).
  int channels = 3;
  // Decode at 1/2, 1/4 or 1/8 scale (DCT domain) when the window stays at least the output size.
  bool dct_scaling = true;
  ResizeMethod method = ResizeMethod::kBilinear;
  bool fast_dct = false;  // See DecodeJpegOptions.
  int64_t max_pixels = int64_t{1} << 28;
};

// What DecodeAndRandomResizedCrop and RandomResizedCrop refuse, as InvalidArgument naming `op`:
// a size that is not positive, a scale outside 0 < min_area <= max_area <= 1, a ratio outside
// 0 < min_aspect_ratio <= max_aspect_ratio (finite), max_attempts < 0. Bindings that build the op
// once check it there, not at every element.
absl::Status CheckRandomResizedCropOptions(const char* op, int64_t out_h, int64_t out_w,
                                           const RandomResizedCropOptions& options);

// The crop window for an image of height x width (both >= 1), as torchvision's
// RandomResizedCrop.get_params picks it: up to max_attempts times, draw an area fraction uniformly
// and an aspect ratio log-uniformly, round the window's sides to nearest (halves to even, as
// Python's round), and keep the first window that fits, placed uniformly at random; otherwise
// the largest centred window whose aspect ratio is clamped into range. The draws come from a
// CounterRng on `seed` (a per-element seed such as ElementContext::seed): the same seed gives the
// same window. Options are assumed valid (DecodeAndRandomResizedCrop checks them).
CropWindow SampleRandomResizedCrop(int64_t height, int64_t width, uint64_t seed,
                                   const RandomResizedCropOptions& options = {});

// Samples a window from the JPEG's header alone, decodes only that window (skipping the rows above
// it, cropping columns to its iMCUs, stopping below it), at the largest DCT scale that keeps the
// window at least out_h x out_w, and resizes it to a uint8 [out_h, out_w, channels] image. The
// window's exact geometry survives the DCT scaling (see Resize with a ResizeRegion), so with
// dct_scaling = false the result equals RandomResizedCrop(DecodeJpeg(jpeg), ...). `output` fuses a
// flip and Normalize into the resize (see ResizeOutput): the training pipeline's whole per-image
// work in one call, with one pass over the output.
absl::StatusOr<Tensor> DecodeAndRandomResizedCrop(absl::string_view jpeg, int64_t out_h,
                                                  int64_t out_w, uint64_t seed,
                                                  const RandomResizedCropOptions& options = {},
                                                  const ResizeOutput& output = {});

// The same augmentation on an already decoded [height, width, channels] uint8 or float32 image
// (`options.channels`, `dct_scaling`, `fast_dct` and `max_pixels` do not apply).
absl::StatusOr<Tensor> RandomResizedCrop(const Tensor& image, int64_t out_h, int64_t out_w,
                                         uint64_t seed,
                                         const RandomResizedCropOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_OPS_RANDOM_RESIZED_CROP_H_
