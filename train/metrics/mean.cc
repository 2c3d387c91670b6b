#include "train/metrics/mean.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"
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

absl::Status Mean::Update(const Tensor& value, double weight) {
  if (value.dtype() != DType::kFloat32 || value.num_elements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": value must be one float32, got ",
                                                   DTypeName(value.dtype()),
                                                   value.shape().DebugString()));
  }
  // weight * value into a tensor of its own, then added as any batch total (one rounding each).
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(value.device()));
  SLUICE_ASSIGN_OR_RETURN(Tensor weighted, backend->Allocate(DType::kFloat32, Shape{1}));
  SLUICE_ASSIGN_OR_RETURN(Tensor flat, value.Reshape(Shape{1}));
  SLUICE_RETURN_IF_ERROR(backend->Fill(weighted, 0.0f));
  SLUICE_RETURN_IF_ERROR(backend->Axpby(static_cast<float>(weight), flat, 1.0f, weighted));
  return Accumulate(std::move(weighted), weight);
}

}  // namespace sluice::train::metrics
