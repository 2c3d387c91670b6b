#ifndef SLUICE_TRAIN_METRICS_MEAN_ABSOLUTE_ERROR_H_
#define SLUICE_TRAIN_METRICS_MEAN_ABSOLUTE_ERROR_H_

#include <string>

#include "train/metrics/mean_metric_wrapper.h"

namespace sluice::train::metrics {

// keras.metrics.MeanAbsoluteError: the mean of |y_pred - y_true| (labels as
// losses::MeanAbsoluteError takes them), each example counting once.
class MeanAbsoluteError : public MeanMetricWrapper {
 public:
  explicit MeanAbsoluteError(std::string name = "mean_absolute_error");
};

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_MEAN_ABSOLUTE_ERROR_H_
