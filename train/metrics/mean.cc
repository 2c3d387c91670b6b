#include "train/metrics/mean.h"

#include "absl/strings/str_cat.h"

namespace sluice::train::metrics {

absl::Status Mean::Update(const Tensor& values) {
  if (values.dtype() != DType::kFloat32) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": values must be float32, got ", DTypeName(values.dtype())));
  }
  double sum = 0;
  for (float v : values.flat<float>()) sum += v;
  Accumulate(sum, static_cast<double>(values.num_elements()));
  return absl::OkStatus();
}

}  // namespace sluice::train::metrics
