#ifndef SLUICE_TRAIN_OPTIMIZERS_SGD_H_
#define SLUICE_TRAIN_OPTIMIZERS_SGD_H_

#include <memory>

#include "train/optimizers/optimizer.h"

namespace sluice::train::optimizers {

struct SgdOptions {
  float learning_rate = 0.01f;
  float momentum = 0.0f;
  bool nesterov = false;
  // Decoupled weight decay, as Keras 3: w -= learning_rate * weight_decay * w
  // before the gradient step.
  float weight_decay = 0.0f;
};

// Keras SGD: v = momentum * v - lr * g; then w += v, or with Nesterov
// w += momentum * v - lr * g. Without momentum, w -= lr * g. Its one slot,
// with momentum only, is "velocity".
class Sgd : public Optimizer {
 public:
  explicit Sgd(SgdOptions options = {});
  // Keras' SGD(learning_rate, ...): Sgd(0.01f), the other options after; `learning_rate`
  // replaces options.learning_rate.
  explicit Sgd(float learning_rate, SgdOptions options = {});
  // Keras' SGD(learning_rate=schedule): the rate follows `schedule`
  // (learning_rate_schedule.h).
  explicit Sgd(std::shared_ptr<const LearningRateSchedule> schedule, SgdOptions options = {});

 protected:
  StepValues ValuesAt(int64_t step, float learning_rate) const override;
  float weight_decay() const override { return options_.weight_decay; }
  backend::UpdateRule Rule() const override;

 private:
  SgdOptions options_;
};

// Keras' name.
using SGD = Sgd;

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_SGD_H_
