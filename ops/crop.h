#ifndef SLUICE_OPS_CROP_H_
#define SLUICE_OPS_CROP_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice {

// A rectangle of whole pixels: rows [y, y + height), columns [x, x + width).
struct CropWindow {
  int64_t y = 0;
  int64_t x = 0;
  int64_t height = 0;
  int64_t width = 0;

  friend bool operator==(const CropWindow& a, const CropWindow& b) {
    return a.y == b.y && a.x == b.x && a.height == b.height && a.width == b.width;
  }
  // "[y=1, x=2, height=3, width=4]".
  std::string DebugString() const;
};

// Images are [height, width, channels] tensors (HWC) of any numeric dtype.

// A copy of `window` of `image`. InvalidArgument unless the window is non-empty and inside the
// image.
absl::StatusOr<Tensor> Crop(const Tensor& image, const CropWindow& window);

// The central height x width window of `image`. The top-left corner is at
// ((H - height) / 2, (W - width) / 2) rounded down, as tf.image.central_crop does (torchvision
// rounds half to even, which differs by one pixel when the margin is odd). A window larger than the
// image is InvalidArgument (torchvision would pad).
absl::StatusOr<Tensor> CenterCrop(const Tensor& image, int64_t height, int64_t width);

}  // namespace sluice

#endif  // SLUICE_OPS_CROP_H_
