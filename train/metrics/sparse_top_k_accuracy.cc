#include "train/metrics/sparse_top_k_accuracy.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice::train::metrics {

SparseTopKAccuracy::SparseTopKAccuracy(int k, std::string name)
    : Metric(name.empty() ? absl::StrCat("top_", k, "_accuracy") : std::move(name)), k_(k) {}

absl::Status SparseTopKAccuracy::Update(const Tensor& labels, const Tensor& predictions) {
  SLUICE_RETURN_IF_ERROR(internal::CheckSparseLabels(name(), labels, predictions));
  if (k_ < 1) return absl::InvalidArgumentError(absl::StrCat(name(), ": k must be >= 1, got ", k_));
  const int64_t n = predictions.dim(0);
  const int64_t c = predictions.dim(1);
  const float* p = predictions.data<float>();
  int64_t hits = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = p + i * c;
    const int64_t label = internal::LabelAt(labels, i);
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
