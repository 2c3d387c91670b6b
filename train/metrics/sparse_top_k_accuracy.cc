#include "train/metrics/sparse_top_k_accuracy.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"

namespace sluice::train::metrics {

SparseTopKAccuracy::SparseTopKAccuracy(int k, std::string name)
    : PredictionMetric(name.empty() ? absl::StrCat("top_", k, "_accuracy") : std::move(name)),
      k_(k) {}

absl::Status SparseTopKAccuracy::Update(const Tensor& labels, const Tensor& predictions) {
  SLUICE_RETURN_IF_ERROR(internal::CheckSparseLabels(name(), labels, predictions));
  if (k_ < 1) return absl::InvalidArgumentError(absl::StrCat(name(), ": k must be >= 1, got ", k_));
  // Hits counted on the predictions' device; only the count's sum comes back, when read.
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend,
                          backend::BackendFor(name(), {&predictions, &labels}));
  const int64_t n = predictions.dim(0);
  SLUICE_ASSIGN_OR_RETURN(Tensor hits, backend->Allocate(DType::kFloat32, Shape{n}));
  SLUICE_RETURN_IF_ERROR(backend->InTopK(predictions, labels, k_, /*first_max_only=*/false, hits));
  return AccumulateSum(hits, 1.0f, static_cast<double>(n));
}

}  // namespace sluice::train::metrics
