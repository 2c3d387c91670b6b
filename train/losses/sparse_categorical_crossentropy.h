#ifndef SLUICE_TRAIN_LOSSES_SPARSE_CATEGORICAL_CROSSENTROPY_H_
#define SLUICE_TRAIN_LOSSES_SPARSE_CATEGORICAL_CROSSENTROPY_H_

#include <string>

#include "train/losses/loss.h"

namespace sluice::train::losses {

struct SparseCategoricalCrossentropyOptions {
  // Whether y_pred holds logits; false: probabilities (a softmax's output), as Keras' default.
  bool from_logits = false;
  // In [0, 1]: the one-hot target of label y becomes onehot(y) * (1 - label_smoothing) +
  // label_smoothing / C, as CategoricalCrossentropy's label_smoothing on one-hot labels (and
  // PyTorch's CrossEntropyLoss(label_smoothing) on class indices); Keras' sparse loss has no
  // such option.
  float label_smoothing = 0.0f;
  Reduction reduction = Reduction::kSumOverBatchSize;
  std::string name = "sparse_categorical_crossentropy";
};

// keras.losses.SparseCategoricalCrossentropy: y_true holds class indices, int32 or int64 [N]
// (or [N, 1]; more generally y_pred's shape without, or with a unit, last axis), y_pred float32
// [N, ..., C] with C >= 2. A label outside [0, C) is an error (see Loss::PerExample's
// `deferred`).
//
// From logits: ops::SparseSoftmaxCrossEntropyWithLogits. From probabilities, as Keras: p is
// clipped to [1e-7, 1 - 1e-7] and normalised, -log(clip(p)[y] / sum(clip(p))), which is the
// logits op applied to log(clip(p)).
//
// With label smoothing e, the loss of a row is (1 - e) * -log p[y] + e * mean over the classes
// of -log p[c].
//
// A model with one output unit is an error: a softmax over one class is always 1, so the loss
// would be 0 whatever the model does. Two classes with one unit take BinaryCrossentropy.
class SparseCategoricalCrossentropy : public Loss {
 public:
  explicit SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions options = {});
  absl::StatusOr<Tensor> PerExample(const Tensor& y_true, const Tensor& y_pred,
                                    ops::LabelRangeCheck* deferred = nullptr) const override;
  std::string AccuracyMetric() const override { return "sparse_categorical_accuracy"; }
  bool from_logits() const { return from_logits_; }
  float label_smoothing() const { return label_smoothing_; }

 protected:
  // Without label smoothing, for y_pred [N, C]: ops::ReducedSparseSoftmaxCrossEntropyWithLogits.
  absl::StatusOr<std::optional<Tensor>> FusedReduced(const Tensor& y_true, const Tensor& y_pred,
                                                     ops::LabelRangeCheck* deferred) const override;

 private:
  // y_true and y_pred checked, as rows: labels [R] and logits [R, C] (log(clip(p)) from
  // probabilities).
  struct Rows {
    Tensor labels;
    Tensor logits;
  };
  absl::StatusOr<Rows> ToRows(const Tensor& y_true, const Tensor& y_pred) const;

  bool from_logits_;
  float label_smoothing_;
};

}  // namespace sluice::train::losses

#endif  // SLUICE_TRAIN_LOSSES_SPARSE_CATEGORICAL_CROSSENTROPY_H_
