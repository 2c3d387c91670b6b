#ifndef SLUICE_TRAIN_METRICS_MEAN_H_
#define SLUICE_TRAIN_METRICS_MEAN_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "train/metrics/metric.h"

namespace sluice::train::metrics {

// keras.metrics.Mean: the weighted mean of the values seen.
class Mean : public Metric {
 public:
  explicit Mean(std::string name = "mean") : Metric(std::move(name)) {}
  void Update(double value, double weight = 1.0) { Accumulate(value * weight, weight); }
  // Every element of a float32 tensor counts once (Keras' update_state(values)).
  absl::Status Update(const Tensor& values);
  // One value, a float32 scalar (any shape of one element) on any device, counted `weight`
  // times: Keras' loss tracker adds the batch loss weighted by the batch size this way. The
  // value stays on its device.
  absl::Status Update(const Tensor& value, double weight);
};

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_MEAN_H_
