#ifndef SLUICE_TRAIN_METRICS_METRIC_FROM_NAME_H_
#define SLUICE_TRAIN_METRICS_METRIC_FROM_NAME_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "train/metrics/prediction_metric.h"

namespace sluice::train::metrics {

// The metric a Keras compile(metrics=[...]) string names, with Keras' defaults:
// "sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy" (threshold 0.5),
// "top_k_categorical_accuracy" and "sparse_top_k_categorical_accuracy" (k = 5),
// "mean_squared_error" (or "mse"), "mean_absolute_error" (or "mae"). "accuracy" (or "acc")
// becomes `accuracy_metric`, which the caller takes from the loss (Loss::AccuracyMetric()); when
// that is empty, "accuracy" is an error asking for the metric by name. The metric's name() is
// `name` as given, as Keras logs "accuracy" when given "accuracy".
absl::StatusOr<std::unique_ptr<PredictionMetric>> MetricFromName(
    absl::string_view name, absl::string_view accuracy_metric = "");

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_METRIC_FROM_NAME_H_
