#include "train/metrics/categorical_accuracy.h"

#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/sum_all.h"

namespace sluice::train::metrics {

absl::Status CategoricalAccuracy::Update(const Tensor& y_true, const Tensor& y_pred) {
  autodiff::PauseRecording pause;
  SLUICE_ASSIGN_OR_RETURN(internal::LabelledRows rows,
                          internal::OneHotToIndices(name(), y_true, y_pred));
  // Hits counted on the predictions' device; only the count's sum comes back, when read.
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend,
                          backend::BackendFor(name(), {&rows.predictions, &rows.labels}));
  const int64_t n = rows.labels.num_elements();
  SLUICE_ASSIGN_OR_RETURN(Tensor hits, backend->Allocate(DType::kFloat32, Shape{n}));
  SLUICE_RETURN_IF_ERROR(
      backend->InTopK(rows.predictions, rows.labels, 1, /*first_max_only=*/true, hits));
  SLUICE_ASSIGN_OR_RETURN(Tensor sum, backend::SumAll(hits));
  return Accumulate(std::move(sum), static_cast<double>(n));
}

}  // namespace sluice::train::metrics
