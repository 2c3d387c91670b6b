#include "train/metrics/sparse_categorical_accuracy.h"

#include "core/status_macros.h"
#include "train/backend/backend.h"

namespace sluice::train::metrics {

absl::Status SparseCategoricalAccuracy::Update(const Tensor& labels, const Tensor& predictions) {
  SLUICE_RETURN_IF_ERROR(internal::CheckSparseLabels(name(), labels, predictions));
  // Hits counted on the predictions' device; only the count's sum comes back, when read.
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend,
                          backend::BackendFor(name(), {&predictions, &labels}));
  const int64_t n = predictions.dim(0);
  SLUICE_ASSIGN_OR_RETURN(Tensor hits, backend->Allocate(DType::kFloat32, Shape{n}));
  SLUICE_RETURN_IF_ERROR(backend->InTopK(predictions, labels, 1, /*first_max_only=*/true, hits));
  return AccumulateSum(hits, 1.0f, static_cast<double>(n));
}

}  // namespace sluice::train::metrics
