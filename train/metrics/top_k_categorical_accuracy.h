#ifndef SLUICE_TRAIN_METRICS_TOP_K_CATEGORICAL_ACCURACY_H_
#define SLUICE_TRAIN_METRICS_TOP_K_CATEGORICAL_ACCURACY_H_

#include <string>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "train/metrics/prediction_metric.h"

namespace sluice::train::metrics {

// keras.metrics.TopKCategoricalAccuracy: how often argmax(y_true) is among the k highest
// predictions, y_true one-hot of y_pred's shape [N, ..., C]. As tf.math.in_top_k (and
// SparseTopKAccuracy), classes tied with the k-th highest all count as in the top k, and a row
// with a non-finite prediction is a miss.
class TopKCategoricalAccuracy : public PredictionMetric {
 public:
  explicit TopKCategoricalAccuracy(int k = 5, std::string name = "top_k_categorical_accuracy");
  int k() const { return k_; }
  absl::Status Update(const Tensor& y_true, const Tensor& y_pred) override;

 protected:
  // CategoricalAccuracy: k = 1 with ties going to the first maximum, as argmax.
  TopKCategoricalAccuracy(int k, std::string name, bool first_max_only)
      : PredictionMetric(std::move(name)), k_(k), first_max_only_(first_max_only) {}

 private:
  int k_;
  bool first_max_only_ = false;
};

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_TOP_K_CATEGORICAL_ACCURACY_H_
