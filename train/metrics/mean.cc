#include "train/metrics/mean.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/sum_all.h"

namespace sluice::train::metrics {

absl::Status Mean::Update(const Tensor& values) {
  if (values.dtype() != DType::kFloat32) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": values must be float32, got ", DTypeName(values.dtype())));
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor sum, backend::SumAll(values));
  return Accumulate(std::move(sum), static_cast<double>(values.num_elements()));
}

}  // namespace sluice::train::metrics
