#include "train/metrics/mean.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice::train::metrics {

absl::Status Mean::Update(const Tensor& values) {
  if (values.dtype() != DType::kFloat32) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": values must be float32, got ", DTypeName(values.dtype())));
  }
  return AccumulateSum(values, 1.0f, static_cast<double>(values.num_elements()));
}

absl::Status Mean::Update(const Tensor& value, double weight) {
  if (value.dtype() != DType::kFloat32 || value.num_elements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": value must be one float32, got ",
                                                   DTypeName(value.dtype()),
                                                   value.shape().DebugString()));
  }
  // weight * value rounded, then added, as Keras' total += value * weight.
  return AccumulateSum(value, static_cast<float>(weight), weight);
}

}  // namespace sluice::train::metrics
