#include "ops/augmentation.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace sluice {

absl::StatusOr<ImageBatchShape> FloatImageBatchShape(const Tensor& images, const char* op) {
  if (images.dtype() != DType::kFloat32 || (images.rank() != 3 && images.rank() != 4)) {
    return absl::InvalidArgumentError(
        absl::StrCat(op,
                     ": expected float32 [batch, height, width, channels] or [height, width, "
                     "channels] images, got ",
                     DTypeName(images.dtype()), images.shape().DebugString()));
  }
  const int offset = images.rank() == 4 ? 1 : 0;
  return ImageBatchShape{.batch = offset == 1 ? images.dim(0) : 1,
                         .height = images.dim(offset),
                         .width = images.dim(offset + 1),
                         .channels = images.dim(offset + 2)};
}

absl::Status CheckFactorRange(const char* op, const char* what, const FactorRange& range,
                              double min, double max) {
  if (!(std::isfinite(range.lower) && std::isfinite(range.upper) && range.lower <= range.upper &&
        range.lower >= min && range.upper <= max)) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", what, " must satisfy ", min,
                                                   " <= lower <= upper <= ", max, ", got [",
                                                   range.lower, ", ", range.upper, "]"));
  }
  return absl::OkStatus();
}

}  // namespace sluice
