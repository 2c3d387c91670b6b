#include "train/metrics/top_k_categorical_accuracy.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"

namespace sluice::train::metrics {

TopKCategoricalAccuracy::TopKCategoricalAccuracy(int k, std::string name)
    : PredictionMetric(std::move(name)), k_(k) {}

absl::Status TopKCategoricalAccuracy::Update(const Tensor& y_true, const Tensor& y_pred) {
  if (k_ < 1) return absl::InvalidArgumentError(absl::StrCat(name(), ": k must be >= 1, got ", k_));
  autodiff::PauseRecording pause;
  SLUICE_ASSIGN_OR_RETURN(internal::LabelledRows rows,
                          internal::OneHotToIndices(name(), y_true, y_pred));
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend,
                          backend::BackendFor(name(), {&rows.predictions, &rows.labels}));
  const int64_t n = rows.labels.num_elements();
  SLUICE_ASSIGN_OR_RETURN(Tensor hits, backend->Allocate(DType::kFloat32, Shape{n}));
  SLUICE_RETURN_IF_ERROR(backend->InTopK(rows.predictions, rows.labels, k_, first_max_only_, hits));
  return AccumulateSum(hits, 1.0f, static_cast<double>(n));
}

}  // namespace sluice::train::metrics
