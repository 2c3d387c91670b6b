#include "train/metrics/metric.h"

#include "absl/strings/str_cat.h"

namespace sluice::train::metrics {

namespace internal {

absl::Status CheckSparseLabels(absl::string_view metric, const Tensor& labels,
                               const Tensor& predictions) {
  if (predictions.dtype() != DType::kFloat32 || predictions.rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(metric, ": predictions must be float32 [N, C], got ",
                     DTypeName(predictions.dtype()), predictions.shape().DebugString()));
  }
  const bool label_dtype_ok = labels.dtype() == DType::kInt32 || labels.dtype() == DType::kInt64;
  const bool label_shape_ok = labels.rank() == 1 || (labels.rank() == 2 && labels.dim(1) == 1);
  if (!label_dtype_ok || !label_shape_ok || labels.num_elements() != predictions.dim(0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(metric, ": labels must be int32 or int64 [", predictions.dim(0),
                     "] to match predictions ", predictions.shape().DebugString(), ", got ",
                     DTypeName(labels.dtype()), labels.shape().DebugString()));
  }
  return absl::OkStatus();
}

int64_t LabelAt(const Tensor& labels, int64_t i) {
  return labels.dtype() == DType::kInt32 ? labels.data<int32_t>()[i] : labels.data<int64_t>()[i];
}

}  // namespace internal

}  // namespace sluice::train::metrics
