#include "train/metrics.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice::train::metrics {
namespace {

// Checks labels [N] or [N, 1] (int32/int64) against predictions float32 [N, C].
absl::Status CheckShapes(absl::string_view metric, const Tensor& labels,
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

}  // namespace

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

absl::Status SparseCategoricalAccuracy::Update(const Tensor& labels, const Tensor& predictions) {
  RETURN_IF_ERROR(CheckShapes(name(), labels, predictions));
  const int64_t n = predictions.dim(0);
  const int64_t c = predictions.dim(1);
  const float* p = predictions.data<float>();
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = p + i * c;
    int64_t best = 0;
    for (int64_t j = 1; j < c; ++j) {
      if (row[j] > row[best]) best = j;
    }
    if (c > 0 && best == LabelAt(labels, i)) ++correct;
  }
  Accumulate(static_cast<double>(correct), static_cast<double>(n));
  return absl::OkStatus();
}

SparseTopKAccuracy::SparseTopKAccuracy(int k, std::string name)
    : Metric(name.empty() ? absl::StrCat("top_", k, "_accuracy") : std::move(name)), k_(k) {}

absl::Status SparseTopKAccuracy::Update(const Tensor& labels, const Tensor& predictions) {
  RETURN_IF_ERROR(CheckShapes(name(), labels, predictions));
  if (k_ < 1) return absl::InvalidArgumentError(absl::StrCat(name(), ": k must be >= 1, got ", k_));
  const int64_t n = predictions.dim(0);
  const int64_t c = predictions.dim(1);
  const float* p = predictions.data<float>();
  int64_t hits = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = p + i * c;
    const int64_t label = LabelAt(labels, i);
    if (label < 0 || label >= c) continue;  // in_top_k: an out-of-range target is a miss
    bool finite = true;
    int64_t greater = 0;  // classes scoring strictly above the label's
    for (int64_t j = 0; j < c; ++j) {
      if (!std::isfinite(row[j])) finite = false;
      if (row[j] > row[label]) ++greater;
    }
    if (finite && greater < k_) ++hits;
  }
  Accumulate(static_cast<double>(hits), static_cast<double>(n));
  return absl::OkStatus();
}

}  // namespace sluice::train::metrics
