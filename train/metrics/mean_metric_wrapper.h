#ifndef SLUICE_TRAIN_METRICS_MEAN_METRIC_WRAPPER_H_
#define SLUICE_TRAIN_METRICS_MEAN_METRIC_WRAPPER_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "train/metrics/prediction_metric.h"

namespace sluice::train::metrics {

// Per-example (or per-element) values of a metric, float32 on the inputs' device.
using MetricFn = std::function<absl::StatusOr<Tensor>(const Tensor& y_true, const Tensor& y_pred)>;

// keras.metrics.MeanMetricWrapper: the mean of every value `fn` returns over all updates, each
// element counting once. `fn` runs with tape recording paused, so it may use any op.
class MeanMetricWrapper : public PredictionMetric {
 public:
  MeanMetricWrapper(std::string name, MetricFn fn);
  absl::Status Update(const Tensor& y_true, const Tensor& y_pred) override;

 private:
  MetricFn fn_;
};

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_MEAN_METRIC_WRAPPER_H_
