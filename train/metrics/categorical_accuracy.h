#ifndef SLUICE_TRAIN_METRICS_CATEGORICAL_ACCURACY_H_
#define SLUICE_TRAIN_METRICS_CATEGORICAL_ACCURACY_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "train/metrics/prediction_metric.h"

namespace sluice::train::metrics {

// keras.metrics.CategoricalAccuracy: how often argmax(y_pred) equals argmax(y_true), y_true
// one-hot (float32, int32 or int64) of y_pred's shape [N, ..., C]; every row over the last axis
// counts once. Ties go to the first maximum, as argmax does.
class CategoricalAccuracy : public PredictionMetric {
 public:
  explicit CategoricalAccuracy(std::string name = "categorical_accuracy")
      : PredictionMetric(std::move(name)) {}
  absl::Status Update(const Tensor& y_true, const Tensor& y_pred) override;
};

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_CATEGORICAL_ACCURACY_H_
