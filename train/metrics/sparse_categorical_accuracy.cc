#include "train/metrics/sparse_categorical_accuracy.h"

#include "core/status_macros.h"

namespace sluice::train::metrics {

absl::Status SparseCategoricalAccuracy::Update(const Tensor& labels, const Tensor& predictions) {
  SLUICE_RETURN_IF_ERROR(internal::CheckSparseLabels(name(), labels, predictions));
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
    if (c > 0 && best == internal::LabelAt(labels, i)) ++correct;
  }
  Accumulate(static_cast<double>(correct), static_cast<double>(n));
  return absl::OkStatus();
}

}  // namespace sluice::train::metrics
