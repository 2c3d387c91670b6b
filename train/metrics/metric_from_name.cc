#include "train/metrics/metric_from_name.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "train/metrics/binary_accuracy.h"
#include "train/metrics/categorical_accuracy.h"
#include "train/metrics/mean_absolute_error.h"
#include "train/metrics/mean_squared_error.h"
#include "train/metrics/sparse_categorical_accuracy.h"
#include "train/metrics/sparse_top_k_accuracy.h"
#include "train/metrics/top_k_categorical_accuracy.h"

namespace sluice::train::metrics {

absl::StatusOr<std::unique_ptr<PredictionMetric>> MetricFromName(
    absl::string_view name, absl::string_view accuracy_metric) {
  absl::string_view kind = name;
  if (name == "accuracy" || name == "acc") {
    if (accuracy_metric.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metric \"", name,
          "\" has no meaning for this loss: name the metric instead, such as "
          "\"binary_accuracy\", \"categorical_accuracy\", \"sparse_categorical_accuracy\", "
          "\"mae\" or \"mse\""));
    }
    kind = accuracy_metric;
  }
  std::string n(name);
  if (kind == "sparse_categorical_accuracy") {
    return std::make_unique<SparseCategoricalAccuracy>(std::move(n));
  }
  if (kind == "categorical_accuracy") return std::make_unique<CategoricalAccuracy>(std::move(n));
  if (kind == "binary_accuracy") {
    return std::make_unique<BinaryAccuracy>(BinaryAccuracyOptions{.name = std::move(n)});
  }
  if (kind == "top_k_categorical_accuracy") {
    return std::make_unique<TopKCategoricalAccuracy>(5, std::move(n));
  }
  if (kind == "sparse_top_k_categorical_accuracy") {
    return std::make_unique<SparseTopKAccuracy>(5, std::move(n));
  }
  if (kind == "mse" || kind == "mean_squared_error") {
    return std::make_unique<MeanSquaredError>(std::move(n));
  }
  if (kind == "mae" || kind == "mean_absolute_error") {
    return std::make_unique<MeanAbsoluteError>(std::move(n));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown metric \"", kind,
      "\"; known: accuracy (acc), sparse_categorical_accuracy, categorical_accuracy, "
      "binary_accuracy, top_k_categorical_accuracy, sparse_top_k_categorical_accuracy, "
      "mean_squared_error (mse), mean_absolute_error (mae), or pass a metric object "
      "(metrics::MeanMetricWrapper wraps any callable)"));
}

}  // namespace sluice::train::metrics
