#include "ops/decode_and_resize.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "ops/decode_jpeg.h"

namespace sluice {

CropWindow CropToAspectRatio(int64_t height, int64_t width, int64_t out_h, int64_t out_w) {
  // Keras computes in Python floats and truncates with int(); so does this.
  const double h = static_cast<double>(height), w = static_cast<double>(width);
  int64_t crop_h =
      static_cast<int64_t>(w * static_cast<double>(out_h) / static_cast<double>(out_w));
  int64_t crop_w =
      static_cast<int64_t>(h * static_cast<double>(out_w) / static_cast<double>(out_h));
  crop_h = std::max<int64_t>(std::min(height, crop_h), 1);
  crop_w = std::max<int64_t>(std::min(width, crop_w), 1);
  return {.y = static_cast<int64_t>(static_cast<double>(height - crop_h) / 2),
          .x = static_cast<int64_t>(static_cast<double>(width - crop_w) / 2),
          .height = crop_h,
          .width = crop_w};
}

absl::StatusOr<Tensor> DecodeWindowAndResize(absl::string_view jpeg, const CropWindow& window,
                                             int64_t out_h, int64_t out_w,
                                             const DecodeAndResizeOptions& options,
                                             const ResizeOutput& output) {
  if (out_h <= 0 || out_w <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("DecodeAndResize: output size must be positive, got ", out_h, "x", out_w));
  }
  if (window.height <= 0 || window.width <= 0 || window.y < 0 || window.x < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("DecodeAndResize: invalid window ", window.DebugString()));
  }
  const int denom =
      options.dct_scaling ? ChooseScaleDenom(window.height, window.width, out_h, out_w) : 1;
  // The whole scaled pixels that cover the window (scaled pixel i covers original pixels
  // [i * denom, (i + 1) * denom)), and the exact window inside them.
  const int64_t y0 = window.y / denom, x0 = window.x / denom;
  const int64_t y1 = JpegScaledSize(window.y + window.height, denom);
  const int64_t x1 = JpegScaledSize(window.x + window.width, denom);
  const DecodeJpegOptions decode{
      .channels = options.channels,
      .crop = CropWindow{.y = y0, .x = x0, .height = y1 - y0, .width = x1 - x0},
      .scale_denom = denom,
      .max_pixels = options.max_pixels,
      .fast_dct = options.fast_dct};
  int64_t decoded_x = 0;  // where column x0 landed in `decoded`
  SLUICE_ASSIGN_OR_RETURN(const Tensor decoded, DecodeJpegCovering(jpeg, decode, &decoded_x));
  const double d = denom;
  const ResizeRegion region{.y = static_cast<double>(window.y) / d - static_cast<double>(y0),
                            .x = static_cast<double>(window.x) / d - static_cast<double>(x0) +
                                 static_cast<double>(decoded_x),
                            .height = static_cast<double>(window.height) / d,
                            .width = static_cast<double>(window.width) / d};
  return Resize(decoded, region, out_h, out_w, options.method, output);
}

absl::StatusOr<Tensor> DecodeAndResize(absl::string_view jpeg, int64_t out_h, int64_t out_w,
                                       const DecodeAndResizeOptions& options,
                                       const ResizeOutput& output) {
  SLUICE_ASSIGN_OR_RETURN(const JpegHeader header, ReadJpegHeader(jpeg));
  const CropWindow window =
      options.crop_to_aspect_ratio
          ? CropToAspectRatio(header.height, header.width, out_h, out_w)
          : CropWindow{.y = 0, .x = 0, .height = header.height, .width = header.width};
  return DecodeWindowAndResize(jpeg, window, out_h, out_w, options, output);
}

}  // namespace sluice
