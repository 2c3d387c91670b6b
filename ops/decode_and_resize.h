#ifndef SLUICE_OPS_DECODE_AND_RESIZE_H_
#define SLUICE_OPS_DECODE_AND_RESIZE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "ops/crop.h"
#include "ops/resize.h"

namespace sluice {

struct DecodeAndResizeOptions {
  // Channels of the result: 3 (RGB, grayscale JPEGs are expanded), 1, or 0 (as encoded).
  int channels = 3;
  // Keras' crop_to_aspect_ratio: resize the largest centred window with the output's aspect ratio
  // (CropToAspectRatio) instead of the whole image, so nothing is stretched.
  bool crop_to_aspect_ratio = false;
  // Decode at 1/2, 1/4 or 1/8 scale (DCT domain) when the window stays at least the output size:
  // much less work than a full decode, and a smoother result than bilinear shrinking by more
  // than 2x (which skips pixels).
  bool dct_scaling = true;
  ResizeMethod method = ResizeMethod::kBilinear;
  bool fast_dct = false;                  // See DecodeJpegOptions.
  int64_t max_pixels = int64_t{1} << 28;  // See DecodeJpegOptions.
};

// The centred window that Keras' crop_to_aspect_ratio keeps of a height x width image for an
// out_h x out_w output: the window's height is int(width * out_h / out_w) and its width
// int(height * out_w / out_h), each clamped to [1, the image's], placed at int((size - window) /
// 2): keras.utils.image_utils.smart_resize's arithmetic.
CropWindow CropToAspectRatio(int64_t height, int64_t width, int64_t out_h, int64_t out_w);

// Decodes only `window` of a JPEG (skipping the rows above it, cropping columns to its iMCUs,
// stopping below it), at the largest DCT scale that keeps it at least out_h x out_w when
// `options.dct_scaling`, and resizes it to [out_h, out_w, channels]: uint8, or what `output`
// makes of it (a fused flip and Normalize; see ResizeOutput). The window's exact geometry survives
// the DCT scaling (see Resize with a ResizeRegion): with dct_scaling = false the result equals
// Resize(Crop(DecodeJpeg(jpeg), window)). `options.crop_to_aspect_ratio` does not apply. The
// window must lie inside the image (InvalidArgument otherwise).
absl::StatusOr<Tensor> DecodeWindowAndResize(absl::string_view jpeg, const CropWindow& window,
                                             int64_t out_h, int64_t out_w,
                                             const DecodeAndResizeOptions& options = {},
                                             const ResizeOutput& output = {});

// Decodes a JPEG and resizes it to [out_h, out_w, channels] (the whole image, or its
// CropToAspectRatio window): what image_dataset_from_directory does to each file, as one call
// that decodes no more than the output needs. Errors as DecodeJpeg's and Resize's.
absl::StatusOr<Tensor> DecodeAndResize(absl::string_view jpeg, int64_t out_h, int64_t out_w,
                                       const DecodeAndResizeOptions& options = {},
                                       const ResizeOutput& output = {});

}  // namespace sluice

#endif  // SLUICE_OPS_DECODE_AND_RESIZE_H_
