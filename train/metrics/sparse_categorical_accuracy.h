#ifndef SLUICE_TRAIN_METRICS_SPARSE_CATEGORICAL_ACCURACY_H_
#define SLUICE_TRAIN_METRICS_SPARSE_CATEGORICAL_ACCURACY_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "train/metrics/prediction_metric.h"

namespace sluice::train::metrics {

// keras.metrics.SparseCategoricalAccuracy: how often argmax(predictions) equals the label.
// Labels int32 or int64 [N] (or [N, 1]); predictions float32 [N, C] (logits or probabilities:
// the argmax is the same). A tie goes to the first maximum, as argmax does.
class SparseCategoricalAccuracy : public PredictionMetric {
 public:
  explicit SparseCategoricalAccuracy(std::string name = "accuracy")
      : PredictionMetric(std::move(name)) {}
  absl::Status Update(const Tensor& labels, const Tensor& predictions) override;
};

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_SPARSE_CATEGORICAL_ACCURACY_H_
