#ifndef SLUICE_TRAIN_LOSSES_CATEGORICAL_CROSSENTROPY_H_
#define SLUICE_TRAIN_LOSSES_CATEGORICAL_CROSSENTROPY_H_

#include <string>

#include "train/losses/loss.h"

namespace sluice::train::losses {

struct CategoricalCrossentropyOptions {
  // Whether y_pred holds logits; false: probabilities, as Keras' default.
  bool from_logits = false;
  // In [0, 1]: y_true becomes y_true * (1 - label_smoothing) + label_smoothing / C.
  float label_smoothing = 0.0f;
  Reduction reduction = Reduction::kSumOverBatchSize;
  std::string name = "categorical_crossentropy";
};

// keras.losses.CategoricalCrossentropy: y_true a distribution over the classes (one-hot), float32
// or int (cast), of y_pred's shape [N, ..., C], C >= 2. The loss is -sum(y_true * log p) over
// the class axis, with log p = log_softmax(y_pred) from logits; from probabilities, as Keras, p
// is normalised to sum 1 and then clipped to [1e-7, 1 - 1e-7].
class CategoricalCrossentropy : public Loss {
 public:
  explicit CategoricalCrossentropy(CategoricalCrossentropyOptions options = {});
  absl::StatusOr<Tensor> PerExample(const Tensor& y_true, const Tensor& y_pred,
                                    ops::LabelRangeCheck* deferred = nullptr) const override;
  std::string AccuracyMetric() const override { return "categorical_accuracy"; }

 private:
  bool from_logits_;
  float label_smoothing_;
};

}  // namespace sluice::train::losses

#endif  // SLUICE_TRAIN_LOSSES_CATEGORICAL_CROSSENTROPY_H_
