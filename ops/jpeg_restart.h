#ifndef SLUICE_OPS_JPEG_RESTART_H_
#define SLUICE_OPS_JPEG_RESTART_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ops/crop.h"

namespace sluice {

// Restart markers: random access into a JPEG's entropy-coded data.
//
// A baseline JPEG's Huffman-coded data can only be read from its start: a crop decode must
// entropy-decode every row above the window (and every column beside it) just to know where the
// window's bits begin. A JPEG with restart markers (DRI) is cut into segments of a fixed number of
// MCUs, each starting at a byte boundary with its DC predictors reset, so the segments that cover
// a window can be copied out, without decoding anything, into a smaller JPEG of just that
// rectangle. Its pixels are those of the original (the same coefficients, the same IDCT), except
// within a chroma sample of the rectangle's edges, which the margin keeps outside the window.

// Re-encodes a JPEG losslessly (the same DCT coefficients, hence the same pixels in every decoder)
// as a baseline JPEG with a restart marker every `interval_mcus` MCUs and optimized Huffman
// tables. A progressive JPEG becomes sequential. APPn and COM markers are kept, except the JFIF
// and Adobe ones that libjpeg writes itself. Grayscale and YCbCr JPEGs only: others (CMYK, YCCK,
// RGB, arithmetic-coded, lossless) are FailedPrecondition, and the caller keeps the bytes as they
// are. A corrupt JPEG is InvalidArgument or DataLoss, as DecodeJpeg's errors.
absl::StatusOr<std::string> AddJpegRestartMarkers(absl::string_view jpeg, int interval_mcus);

// A JPEG of a rectangle of another JPEG's MCUs.
struct JpegRegion {
  std::string jpeg;  // A complete baseline JPEG.
  // Its top-left pixel in the original image: multiples of the MCU size (8 or 16 pixels).
  int64_t y = 0;
  int64_t x = 0;
  // The original image's size, as its header declares it.
  int64_t full_height = 0;
  int64_t full_width = 0;
};

// The smallest rectangle of whole restart segments that covers `window` widened by `margin` pixels
// on each side, as a JPEG of its own. `window` and `margin` are in pixels of the image decoded at
// 1/scale_denom (1, 2, 4 or 8), as DecodeJpegOptions::crop. nullopt when that is not
// possible or saves nothing: no restart markers, segments that are neither a divisor nor a
// multiple of an MCU row, a progressive or multi-scan JPEG, restart markers out of sequence or
// data that ends early (the caller's whole-image decode then reports what is wrong), or a
// rectangle that is the whole image.
std::optional<JpegRegion> ExtractJpegRegion(absl::string_view jpeg, const CropWindow& window,
                                            int scale_denom, int64_t margin);

}  // namespace sluice

#endif  // SLUICE_OPS_JPEG_RESTART_H_
