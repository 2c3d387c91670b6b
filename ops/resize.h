#ifndef SLUICE_OPS_RESIZE_H_
#define SLUICE_OPS_RESIZE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "ops/normalize.h"

namespace sluice {

enum class ResizeMethod {
  // Bilinear interpolation with half-pixel centres, like tf.image.resize(antialias=False) and
  // torch.nn.functional.interpolate(mode="bilinear", align_corners=False): output pixel o samples
  // the input at (o + 0.5) * in / out - 0.5, clamped to the edge pixels. Without antialiasing:
  // when shrinking by more than 2x, prefer kArea (or DCT scaling while decoding a JPEG).
  kBilinear,
  // Box filter: each output pixel is the mean of the input area it covers, partial pixels weighted
  // by their covered fraction, like tf.image.resize(method="area") and cv2.INTER_AREA for
  // shrinking. Shrinking by an integer factor k averages k x k blocks.
  kArea,
};

// A rectangle in continuous coordinates: input pixel (i, j) covers [i, i + 1) x [j, j + 1). The
// whole image is {0, 0, height, width}.
struct ResizeRegion {
  double y = 0;
  double x = 0;
  double height = 0;
  double width = 0;

  std::string DebugString() const;
};

// Resizes a [height, width, channels] image (HWC) to [out_h, out_w, channels], as tf.image.resize
// does: the result is float32, unrounded, for a uint8 or float32 image. (torchvision's resize of
// a uint8 image rounds back to uint8: the overload with a ResizeOutput does that by default.)
absl::StatusOr<Tensor> Resize(const Tensor& image, int64_t out_h, int64_t out_w,
                              ResizeMethod method = ResizeMethod::kBilinear);

// Resizes the part of `image` inside `region` to float32 [out_h, out_w, channels]: the same as
// cropping `region` and resizing the crop when the region is whole pixels, and its continuous
// extension when it is not (bilinear samples are clamped to the centres of the pixels the region
// touches, area averages are weighted by coverage). A JPEG decoded at a DCT scale of 1/k keeps a
// crop's exact geometry this way: its window in the scaled image is the original window divided by
// k. The region must lie inside the image and be non-empty.
absl::StatusOr<Tensor> Resize(const Tensor& image, const ResizeRegion& region, int64_t out_h,
                              int64_t out_w, ResizeMethod method = ResizeMethod::kBilinear);

// What the result is, and work fused into Resize's output loop: the result is bitwise what
// FlipLeftRight and then Normalize (float32, channels last) would make of the rounded uint8 resize,
// without their passes over the image and their intermediate tensors.
struct ResizeOutput {
  // A uint8 image without `normalize`: true gives a uint8 result rounded to nearest, halves up
  // (torchvision's resize of a uint8 image, and a quarter of the memory); false float32, unrounded
  // (tf.image.resize). A float32 image always gives float32.
  bool round_to_uint8 = true;
  bool flip_left_right = false;
  // For a uint8 image: each resized value, rounded to uint8 as Resize rounds it, is written as
  // float32 through this table (which must have the image's channel count). Not owned; only read
  // during the call.
  const NormalizeTable* normalize = nullptr;
  // Written in place of a new tensor when set (memory from a BufferPool, a row of a batch): its
  // dtype and shape must be the result's. Resize then returns a tensor sharing its buffer.
  Tensor* destination = nullptr;
  // Write the result with non-temporal stores (around the CPU caches): for a result nobody reads
  // soon, such as a row of a batch of tens of MB, this halves the memory traffic (no cache line is
  // read before it is written) and keeps the caches for the work at hand. Slower for a result
  // read right away.
  bool streaming_stores = false;
};

absl::StatusOr<Tensor> Resize(const Tensor& image, const ResizeRegion& region, int64_t out_h,
                              int64_t out_w, ResizeMethod method, const ResizeOutput& output);

}  // namespace sluice

#endif  // SLUICE_OPS_RESIZE_H_
