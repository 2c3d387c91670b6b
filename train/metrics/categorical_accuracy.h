#ifndef SLUICE_TRAIN_METRICS_CATEGORICAL_ACCURACY_H_
#define SLUICE_TRAIN_METRICS_CATEGORICAL_ACCURACY_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "train/metrics/top_k_categorical_accuracy.h"

namespace sluice::train::metrics {

// keras.metrics.CategoricalAccuracy: how often argmax(y_pred) equals argmax(y_true), y_true
// one-hot (float32, int32 or int64) of y_pred's shape [N, ..., C]; every row over the last axis
// counts once. Ties go to the first maximum, as argmax does.
class CategoricalAccuracy : public TopKCategoricalAccuracy {
 public:
  explicit CategoricalAccuracy(std::string name = "categorical_accuracy")
      : TopKCategoricalAccuracy(1, std::move(name), /*first_max_only=*/true) {}
};

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_CATEGORICAL_ACCURACY_H_
