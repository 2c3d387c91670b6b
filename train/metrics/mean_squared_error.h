#ifndef SLUICE_TRAIN_METRICS_MEAN_SQUARED_ERROR_H_
#define SLUICE_TRAIN_METRICS_MEAN_SQUARED_ERROR_H_

#include <string>

#include "train/metrics/mean_metric_wrapper.h"

namespace sluice::train::metrics {

// keras.metrics.MeanSquaredError: the mean of (y_pred - y_true)^2 (labels as
// losses::MeanSquaredError takes them), each example counting once.
class MeanSquaredError : public MeanMetricWrapper {
 public:
  explicit MeanSquaredError(std::string name = "mean_squared_error");
};

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_MEAN_SQUARED_ERROR_H_
