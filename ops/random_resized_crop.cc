#include "ops/random_resized_crop.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "ops/counter_rng.h"
#include "ops/decode_and_resize.h"
#include "ops/decode_jpeg.h"

namespace sluice {

absl::Status CheckRandomResizedCropOptions(const char* op, int64_t out_h, int64_t out_w,
                                           const RandomResizedCropOptions& o) {
  if (out_h <= 0 || out_w <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": output size must be positive, got ", out_h, "x", out_w));
  }
  if (!(o.min_area > 0 && o.min_area <= o.max_area && o.max_area <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": need 0 < min_area <= max_area <= 1, got ",
                                                   o.min_area, " and ", o.max_area));
  }
  if (!(o.min_aspect_ratio > 0 && o.min_aspect_ratio <= o.max_aspect_ratio &&
        std::isfinite(o.max_aspect_ratio))) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": need 0 < min_aspect_ratio <= max_aspect_ratio, got ",
                     o.min_aspect_ratio, " and ", o.max_aspect_ratio));
  }
  if (o.max_attempts < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": max_attempts must be >= 0, got ", o.max_attempts));
  }
  return absl::OkStatus();
}

namespace {

// Python's int(round(x)): halves to even (nearbyint in the default rounding mode).
int64_t RoundHalfEven(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

}  // namespace

CropWindow SampleRandomResizedCrop(int64_t height, int64_t width, uint64_t seed,
                                   const RandomResizedCropOptions& options) {
  CounterRng rng(seed, kRandomResizedCropStream);
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_lo = std::log(options.min_aspect_ratio);
  const double log_hi = std::log(options.max_aspect_ratio);
  for (int attempt = 0; attempt < options.max_attempts; ++attempt) {
    const double target_area = area * rng.Uniform(options.min_area, options.max_area);
    const double aspect_ratio = std::exp(rng.Uniform(log_lo, log_hi));
    const int64_t w = RoundHalfEven(std::sqrt(target_area * aspect_ratio));
    const int64_t h = RoundHalfEven(std::sqrt(target_area / aspect_ratio));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int64_t y = static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(height - h + 1)));
      const int64_t x = static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(width - w + 1)));
      return {.y = y, .x = x, .height = h, .width = w};
    }
  }
  // Fallback: a centre crop, the whole image unless its aspect ratio is out of range.
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int64_t w = width, h = height;
  if (in_ratio < options.min_aspect_ratio) {
    h = RoundHalfEven(static_cast<double>(w) / options.min_aspect_ratio);
  } else if (in_ratio > options.max_aspect_ratio) {
    w = RoundHalfEven(static_cast<double>(h) * options.max_aspect_ratio);
  }
  h = std::clamp<int64_t>(h, 1, height);
  w = std::clamp<int64_t>(w, 1, width);
  return {.y = (height - h) / 2, .x = (width - w) / 2, .height = h, .width = w};
}

absl::StatusOr<Tensor> DecodeAndRandomResizedCrop(absl::string_view jpeg, int64_t out_h,
                                                  int64_t out_w, uint64_t seed,
                                                  const RandomResizedCropOptions& options,
                                                  const ResizeOutput& output) {
  SLUICE_RETURN_IF_ERROR(
      CheckRandomResizedCropOptions("DecodeAndRandomResizedCrop", out_h, out_w, options));
  SLUICE_ASSIGN_OR_RETURN(const JpegHeader header, ReadJpegHeader(jpeg));
  const CropWindow window = SampleRandomResizedCrop(header.height, header.width, seed, options);
  return DecodeWindowAndResize(jpeg, window, out_h, out_w,
                               {.channels = options.channels,
                                .dct_scaling = options.dct_scaling,
                                .method = options.method,
                                .fast_dct = options.fast_dct,
                                .max_pixels = options.max_pixels},
                               output);
}

absl::StatusOr<Tensor> RandomResizedCrop(const Tensor& image, int64_t out_h, int64_t out_w,
                                         uint64_t seed, const RandomResizedCropOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckRandomResizedCropOptions("RandomResizedCrop", out_h, out_w, options));
  if (image.rank() != 3 || image.dim(0) <= 0 || image.dim(1) <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RandomResizedCrop: expected a non-empty [height, width, channels] image, got ",
        image.shape().DebugString()));
  }
  const CropWindow w = SampleRandomResizedCrop(image.dim(0), image.dim(1), seed, options);
  return Resize(image,
                ResizeRegion{.y = static_cast<double>(w.y),
                             .x = static_cast<double>(w.x),
                             .height = static_cast<double>(w.height),
                             .width = static_cast<double>(w.width)},
                out_h, out_w, options.method, ResizeOutput{});  // uint8 stays uint8, as torchvision
}

}  // namespace sluice
