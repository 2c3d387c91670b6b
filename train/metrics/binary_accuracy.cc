#include "train/metrics/binary_accuracy.h"

#include <utility>

#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/losses/loss_util.h"
#include "train/ops/arithmetic.h"
#include "train/ops/scalar.h"

namespace sluice::train::metrics {

BinaryAccuracy::BinaryAccuracy(BinaryAccuracyOptions options)
    : PredictionMetric(std::move(options.name)), threshold_(options.threshold) {}

absl::Status BinaryAccuracy::Update(const Tensor& y_true, const Tensor& y_pred) {
  autodiff::PauseRecording pause;
  // The losses' label rules, so that any labels BinaryCrossentropy takes are scored alike.
  SLUICE_RETURN_IF_ERROR(losses::internal::CheckPredictions(name(), y_pred, y_true, 1));
  SLUICE_ASSIGN_OR_RETURN(Tensor labels, losses::internal::DenseLabels(name(), y_true, y_pred));
  SLUICE_ASSIGN_OR_RETURN(Tensor threshold, ops::ScalarLike(threshold_, y_pred));
  SLUICE_ASSIGN_OR_RETURN(Tensor predicted, ops::Greater(y_pred, threshold));
  SLUICE_ASSIGN_OR_RETURN(Tensor hits, ops::Equal(predicted, labels));
  return AccumulateSum(hits, 1.0f, static_cast<double>(hits.num_elements()));
}

}  // namespace sluice::train::metrics
