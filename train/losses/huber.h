#ifndef SLUICE_TRAIN_LOSSES_HUBER_H_
#define SLUICE_TRAIN_LOSSES_HUBER_H_

#include <string>

#include "train/losses/loss.h"

namespace sluice::train::losses {

struct HuberOptions {
  // Where the loss turns from quadratic to linear; > 0.
  float delta = 1.0f;
  Reduction reduction = Reduction::kSumOverBatchSize;
  std::string name = "huber_loss";
};

// keras.losses.Huber: with e = y_pred - y_true, 0.5 e^2 where |e| <= delta, else
// delta (|e| - 0.5 delta), averaged per example. y_true as for MeanSquaredError.
class Huber : public Loss {
 public:
  explicit Huber(HuberOptions options = {});
  absl::StatusOr<Tensor> PerExample(const Tensor& y_true, const Tensor& y_pred,
                                    ops::LabelRangeCheck* deferred = nullptr) const override;
  float delta() const { return delta_; }

 private:
  float delta_;
};

}  // namespace sluice::train::losses

#endif  // SLUICE_TRAIN_LOSSES_HUBER_H_
