#ifndef SLUICE_TRAIN_METRICS_PREDICTION_METRIC_H_
#define SLUICE_TRAIN_METRICS_PREDICTION_METRIC_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "train/metrics/metric.h"

namespace sluice::train::metrics {

// A metric of a model's predictions against the labels, as those compile(metrics=[...]) takes:
// Fit and Evaluate call Update once per batch with the batch's labels and the model's outputs.
// Updates run on the tensors' device and record nothing on an active tape.
class PredictionMetric : public Metric {
 public:
  explicit PredictionMetric(std::string name) : Metric(std::move(name)) {}
  virtual absl::Status Update(const Tensor& y_true, const Tensor& y_pred) = 0;
};

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_PREDICTION_METRIC_H_
