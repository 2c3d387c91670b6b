#ifndef SLUICE_TRAIN_METRICS_H_
#define SLUICE_TRAIN_METRICS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"

// In their own namespace, as keras.metrics: metrics::Mean is not the train::Mean reduction.

namespace sluice::train::metrics {

// A streaming metric, as a Keras Metric: Update accumulates, Result reads, Reset starts over.
// Every metric here is a ratio total / count, which is also its whole state: a checkpoint saves
// the two sums so that a run resumed mid-epoch reports the same means. Sums are doubles (Keras
// keeps float32), so long epochs do not lose precision.
class Metric {
 public:
  explicit Metric(std::string name) : name_(std::move(name)) {}
  virtual ~Metric() = default;

  const std::string& name() const { return name_; }
  // total / count; 0 before any update (as Keras' Mean).
  double Result() const { return count_ > 0 ? total_ / count_ : 0.0; }
  void Reset() {
    total_ = 0;
    count_ = 0;
  }
  double total() const { return total_; }
  double count() const { return count_; }
  void SetState(double total, double count) {
    total_ = total;
    count_ = count;
  }

 protected:
  void Accumulate(double total, double count) {
    total_ += total;
    count_ += count;
  }

 private:
  std::string name_;
  double total_ = 0;
  double count_ = 0;
};

// keras.metrics.Mean: the weighted mean of the values seen.
class Mean : public Metric {
 public:
  explicit Mean(std::string name = "mean") : Metric(std::move(name)) {}
  void Update(double value, double weight = 1.0) { Accumulate(value * weight, weight); }
  // Every element of a float32 tensor counts once (Keras' update_state(values)).
  absl::Status Update(const Tensor& values);
};

// keras.metrics.SparseCategoricalAccuracy: how often argmax(predictions) equals the label.
// Labels int32 or int64 [N] (or [N, 1]); predictions float32 [N, C] (logits or probabilities:
// the argmax is the same). A tie goes to the first maximum, as argmax does.
class SparseCategoricalAccuracy : public Metric {
 public:
  explicit SparseCategoricalAccuracy(std::string name = "accuracy") : Metric(std::move(name)) {}
  absl::Status Update(const Tensor& labels, const Tensor& predictions);
};

// keras.metrics.SparseTopKCategoricalAccuracy: how often the label is among the k highest
// predictions. As tf.math.in_top_k, classes tied with the k-th highest all count as in the top k,
// and a row with a non-finite prediction counts as a miss.
class SparseTopKAccuracy : public Metric {
 public:
  explicit SparseTopKAccuracy(int k = 5, std::string name = "");
  int k() const { return k_; }
  absl::Status Update(const Tensor& labels, const Tensor& predictions);

 private:
  int k_;
};

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_H_
