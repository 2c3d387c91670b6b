#ifndef SLUICE_TRAIN_LOSSES_BINARY_CROSSENTROPY_H_
#define SLUICE_TRAIN_LOSSES_BINARY_CROSSENTROPY_H_

#include <string>

#include "train/losses/loss.h"

namespace sluice::train::losses {

struct BinaryCrossentropyOptions {
  // Whether y_pred holds logits; false: probabilities (a sigmoid's output), as Keras' default.
  bool from_logits = false;
  // In [0, 1]: y_true becomes y_true * (1 - label_smoothing) + 0.5 * label_smoothing.
  float label_smoothing = 0.0f;
  Reduction reduction = Reduction::kSumOverBatchSize;
  std::string name = "binary_crossentropy";
};

// keras.losses.BinaryCrossentropy: y_true in {0, 1} (float32, int32 or int64), of y_pred's shape
// or with one unit axis more or less at the end ([N] labels for [N, 1] predictions); y_pred
// float32 [N, ...], each element an independent binary prediction.
//
// From logits x (tf.nn.sigmoid_cross_entropy_with_logits): softplus(x) - x * z, stable for any x.
// From probabilities p, as Keras 3: p clipped to [1e-7, 1 - 1e-7], then
// -(z log p + (1 - z) log(1 - p)).
class BinaryCrossentropy : public Loss {
 public:
  explicit BinaryCrossentropy(BinaryCrossentropyOptions options = {});
  absl::StatusOr<Tensor> PerExample(const Tensor& y_true, const Tensor& y_pred,
                                    ops::LabelRangeCheck* deferred = nullptr) const override;
  std::string AccuracyMetric() const override { return "binary_accuracy"; }

 private:
  bool from_logits_;
  float label_smoothing_;
};

}  // namespace sluice::train::losses

#endif  // SLUICE_TRAIN_LOSSES_BINARY_CROSSENTROPY_H_
