#ifndef SLUICE_TRAIN_METRICS_METRIC_H_
#define SLUICE_TRAIN_METRICS_METRIC_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"

namespace sluice::train::metrics {

// The metrics live in their own namespace, as keras.metrics: metrics::Mean is not the ops::Mean
// reduction. This folder owns the streaming metrics Fit and Evaluate report.

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

namespace internal {
// Checks labels [N] or [N, 1] (int32/int64) against predictions float32 [N, C]; `metric` starts
// the message. Shared by the sparse accuracy metrics.
absl::Status CheckSparseLabels(absl::string_view metric, const Tensor& labels,
                               const Tensor& predictions);
// Label i of labels checked by CheckSparseLabels.
int64_t LabelAt(const Tensor& labels, int64_t i);
}  // namespace internal

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_METRIC_H_
