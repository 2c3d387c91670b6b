#include "ops/crop.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace sluice {

std::string CropWindow::DebugString() const {
  return absl::StrCat("[y=", y, ", x=", x, ", height=", height, ", width=", width, "]");
}

absl::StatusOr<Tensor> Crop(const Tensor& image, const CropWindow& window) {
  if (image.rank() != 3 || image.dtype() == DType::kBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("Crop: expected a numeric [height, width, channels] image, got ",
                     DTypeName(image.dtype()), image.shape().DebugString()));
  }
  const int64_t h = image.dim(0), w = image.dim(1), c = image.dim(2);
  if (window.height <= 0 || window.width <= 0 || window.y < 0 || window.x < 0 ||
      window.y > h - window.height || window.x > w - window.width) {
    return absl::InvalidArgumentError(absl::StrCat("Crop: window ", window.DebugString(),
                                                   " is empty or not inside the ", h, "x", w,
                                                   " image"));
  }
  Tensor out(image.dtype(), Shape{window.height, window.width, c});
  const size_t pixel = static_cast<size_t>(c) * DTypeSize(image.dtype());
  const size_t src_stride = static_cast<size_t>(w) * pixel;
  const size_t row_bytes = static_cast<size_t>(window.width) * pixel;
  const char* src = static_cast<const char*>(image.raw_data()) +
                    static_cast<size_t>(window.y) * src_stride +
                    static_cast<size_t>(window.x) * pixel;
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t r = 0; r < window.height; ++r) {
    std::memcpy(dst + static_cast<size_t>(r) * row_bytes, src + static_cast<size_t>(r) * src_stride,
                row_bytes);
  }
  return out;
}

absl::StatusOr<Tensor> CenterCrop(const Tensor& image, int64_t height, int64_t width) {
  if (image.rank() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("CenterCrop: expected a [height, width, channels] image, got shape ",
                     image.shape().DebugString()));
  }
  if (height <= 0 || width <= 0 || height > image.dim(0) || width > image.dim(1)) {
    return absl::InvalidArgumentError(absl::StrCat("CenterCrop: a ", height, "x", width,
                                                   " window does not fit in the ", image.dim(0),
                                                   "x", image.dim(1), " image"));
  }
  return Crop(image, {.y = (image.dim(0) - height) / 2,
                      .x = (image.dim(1) - width) / 2,
                      .height = height,
                      .width = width});
}

}  // namespace sluice
