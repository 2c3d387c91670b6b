#ifndef SLUICE_TRAIN_METRICS_METRIC_H_
#define SLUICE_TRAIN_METRICS_METRIC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"

namespace sluice::train::metrics {

// The metrics live in their own namespace, as keras.metrics: metrics::Mean is not the ops::Mean
// reduction. This folder owns the streaming metrics Fit and Evaluate report.

// A streaming metric, as a Keras Metric: Update accumulates, Result reads, Reset starts over.
// Every metric here is a ratio total / count, which is also its whole state: a checkpoint saves
// the two sums so that a run resumed mid-epoch reports the same means.
//
// Updates run on the device of their inputs: a batch's total is reduced there and added to a
// float32 running total that stays there, so that a training step never waits for the device,
// and a traced step records the updates with its kernels (PrepareOn).
// Reading (Result, total) copies that one number back and changes nothing: the sums are one
// float32 chain, as Keras' metric variables, whenever and however often the loop reads them, so
// a run resumed from a checkpoint (SetState) continues the very chain of the run it left. Counts
// come from shapes, known on the host.
class Metric {
 public:
  explicit Metric(std::string name) : name_(std::move(name)) {}
  virtual ~Metric() = default;

  const std::string& name() const { return name_; }
  // total / count; 0 before any update (as Keras' Mean).
  absl::StatusOr<double> Result() const;
  void Reset();
  absl::StatusOr<double> total() const;
  double count() const { return count_; }
  void SetState(double total, double count);

  // Makes the running total a tensor on `device` that holds it, before every call of a traced
  // step whose updates run there (function::Function, CompiledTrainStep): a traced update only
  // adds to it, and its count comes back at every replay (backend::AtEveryCall). Updates call it
  // themselves when not traced. The tensor stays the same one unless the updates move to
  // another device; Reset and SetState mark it stale, and this call refills it, so a replay
  // after them without this call would add to the stale total.
  absl::Status PrepareOn(const Device& device);

 protected:
  void Accumulate(double total, double count);
  // Adds scale * the sum of `values` (float32, any shape, on any device) to the running total on
  // their device, in one kernel (Backend::AccumulateSum), and `count` to the count.
  absl::Status AccumulateSum(const Tensor& values, float scale, double count);

 private:
  std::string name_;
  // The running total on the device of the updates, from the first device update on; total_
  // holds what came from the host (SetState, host updates) until the next PrepareOn writes it
  // into pending_ (refill_).
  std::optional<Tensor> pending_;
  bool refill_ = false;  // pending_ is stale: the next PrepareOn fills it with total_
  double total_ = 0;
  double count_ = 0;
};

namespace internal {
// Checks labels [N] or [N, 1] (int32/int64) against predictions float32 [N, C]; `metric` starts
// the message. Shared by the sparse accuracy metrics.
absl::Status CheckSparseLabels(absl::string_view metric, const Tensor& labels,
                               const Tensor& predictions);

// One-hot labels as class indices: checks y_true (float32, int32 or int64) against predictions
// float32 [N, ..., C] of its shape, and returns the predictions as rows [R, C] with the index of
// each row's label, argmax(y_true) int64 [R], both on the predictions' device. Shared by the
// categorical accuracy metrics. Call with recording paused.
struct LabelledRows {
  Tensor predictions;
  Tensor labels;
};
absl::StatusOr<LabelledRows> OneHotToIndices(absl::string_view metric, const Tensor& y_true,
                                             const Tensor& y_pred);
}  // namespace internal

}  // namespace sluice::train::metrics

#endif  // SLUICE_TRAIN_METRICS_METRIC_H_
