#ifndef SLUICE_TRAIN_FIT_COMPILED_METRICS_H_
#define SLUICE_TRAIN_FIT_COMPILED_METRICS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "train/callbacks/callback.h"
#include "train/fit/replicas.h"
#include "train/fit/trainer_options.h"
#include "train/fit/training_checkpoint.h"
#include "train/losses/loss.h"
#include "train/metrics/mean.h"
#include "train/metrics/metric.h"
#include "train/metrics/prediction_metric.h"

namespace sluice::train::fit {

// Keras' loss tracker and compiled metrics of one Fit (or one Evaluate): "loss" (the batches'
// reduced loss with its regularisation, weighted by batch size) and the metrics that
// TrainerOptions names, each a running total / count.
class CompiledMetrics {
 public:
  // The metrics of `options` (TrainerOptions::metrics and top_k) for `loss`: "accuracy" resolves
  // by the loss, as in Keras. InvalidArgument for an unknown name or two metrics of one name.
  static absl::StatusOr<std::unique_ptr<CompiledMetrics>> Create(const TrainerOptions& options,
                                                                 const losses::Loss& loss);

  // `batch_loss`: the batch's reduced loss, a float32 scalar on the device.
  absl::Status Update(const Tensor& batch_loss, const Tensor& y_true, const Tensor& y_pred);
  void Reset();
  // Before a traced step that updates the metrics on `device` (metrics::Metric::PrepareOn).
  absl::Status PrepareOn(const Device& device);

  // The metrics' values by name (each after `prefix`): over every rank's examples when the
  // replicas are distributed (a collective every rank calls).
  absl::StatusOr<callbacks::Logs> Logs(Replicas& replicas, const std::string& prefix = "") const;

  // The running sums, for a checkpoint taken inside an epoch, and their restoration.
  absl::StatusOr<std::vector<MetricState>> State() const;
  void Restore(const std::vector<MetricState>& state);

 private:
  CompiledMetrics() = default;
  std::vector<const metrics::Metric*> All() const;

  metrics::Mean loss_{"loss"};
  std::vector<std::unique_ptr<metrics::PredictionMetric>> compiled_;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_COMPILED_METRICS_H_
