#ifndef SLUICE_TRAIN_METRICS_SPARSE_TOP_K_ACCURACY_H_
#define SLUICE_TRAIN_METRICS_SPARSE_TOP_K_ACCURACY_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "train/metrics/prediction_metric.h"

namespace sluice::train::metrics {

// keras.metrics.SparseTopKCategoricalAccuracy: how often the label is among the k highest
// predictions. As tf.math.in_top_k, classes tied with the k-th highest all count as in the top k,
// and a row with a non-finite prediction counts as a miss.
class SparseTopKAccuracy : public PredictionMetric {
 public:
  explicit SparseTopKAccuracy(int k = 5, std::string name = "");
  int k() const { return k_; }
  absl::Status Update(const Tensor& labels, const Tensor& predictions) override;

 private:
  int k_;
};

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_SPARSE_TOP_K_ACCURACY_H_
