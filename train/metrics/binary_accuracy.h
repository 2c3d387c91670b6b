#ifndef SLUICE_TRAIN_METRICS_BINARY_ACCURACY_H_
#define SLUICE_TRAIN_METRICS_BINARY_ACCURACY_H_

#include <string>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "train/metrics/prediction_metric.h"

namespace sluice::train::metrics {

struct BinaryAccuracyOptions {
  // A prediction above it counts as 1 (a probability: 0.5; for logits pass 0).
  float threshold = 0.5f;
  std::string name = "binary_accuracy";
};

// keras.metrics.BinaryAccuracy: how often (y_pred > threshold) equals y_true, elementwise. y_true
// in {0, 1} (float32, int32 or int64) of y_pred's shape, or with one unit axis more or less at
// the end ([N] labels for [N, 1] predictions); every element counts once.
class BinaryAccuracy : public PredictionMetric {
 public:
  explicit BinaryAccuracy(BinaryAccuracyOptions options = {});
  float threshold() const { return threshold_; }
  absl::Status Update(const Tensor& y_true, const Tensor& y_pred) override;

 private:
  float threshold_;
};

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_BINARY_ACCURACY_H_
