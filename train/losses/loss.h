#ifndef SLUICE_TRAIN_LOSSES_LOSS_H_
#define SLUICE_TRAIN_LOSSES_LOSS_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "train/ops/cross_entropy.h"

namespace sluice::train::losses {

// The losses live in their own namespace, as keras.losses: losses::MeanSquaredError is not the
// metric of the same name (metrics::MeanSquaredError).

// How a loss reduces its per-example values, as Keras' `reduction`.
enum class Reduction {
  kSumOverBatchSize,  // the mean over the batch, a scalar (Keras' default)
  kSum,               // the sum over the batch, a scalar
  kNone,              // the per-example losses [N]
};

// A Keras loss object: called with (y_true, y_pred), it returns the reduced loss, built from ops
// so that an active Tape records it and gradients reach y_pred (never y_true).
//
// y_pred's first axis is the batch. The elementwise loss is averaged over every other axis,
// which for [N, C] is Keras' mean over the last axis, and for more axes gives the same mean as
// Keras' kSumOverBatchSize (Keras keeps [N, ...] until the reduction; kSum therefore differs by
// the count of those inner positions).
class Loss {
 public:
  Loss(std::string name, Reduction reduction);
  virtual ~Loss() = default;

  // The per-example losses, float32 [N], on y_pred's device. `deferred`: where a label range
  // check (sparse labels) is stored instead of being read back from the device at once (see
  // ops::LabelRangeCheck); nullptr: checked now.
  virtual absl::StatusOr<Tensor> PerExample(const Tensor& y_true, const Tensor& y_pred,
                                            ops::LabelRangeCheck* deferred = nullptr) const = 0;

  // `per_example` (float32 [N]) reduced: kSumOverBatchSize: its mean, a scalar (0 for an empty
  // batch); kSum: its sum; kNone: itself.
  absl::StatusOr<Tensor> Reduce(const Tensor& per_example) const;

  // PerExample, then Reduce (or FusedReduced, which gives their values).
  absl::StatusOr<Tensor> operator()(const Tensor& y_true, const Tensor& y_pred,
                                    ops::LabelRangeCheck* deferred = nullptr) const;

  // The metric Keras' "accuracy" resolves to with this loss: "sparse_categorical_accuracy",
  // "categorical_accuracy", "binary_accuracy", or "" when accuracy has no meaning for it.
  virtual std::string AccuracyMetric() const { return ""; }

  const std::string& name() const { return name_; }
  Reduction reduction() const { return reduction_; }

 protected:
  // operator()'s value for a reduction other than kNone in fewer kernels than PerExample then
  // Reduce (the reduction fused into the loss's kernel), with their values; nullopt where this
  // loss has no such form for these arguments.
  virtual absl::StatusOr<std::optional<Tensor>> FusedReduced(
      const Tensor& /*y_true*/, const Tensor& /*y_pred*/,
      ops::LabelRangeCheck* /*deferred*/) const {
    return std::nullopt;
  }

 private:
  std::string name_;
  Reduction reduction_;
};

}  // namespace sluice::train::losses

#endif  // SLUICE_TRAIN_LOSSES_LOSS_H_
