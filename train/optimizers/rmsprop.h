#ifndef SLUICE_TRAIN_OPTIMIZERS_RMSPROP_H_
#define SLUICE_TRAIN_OPTIMIZERS_RMSPROP_H_

#include <array>
#include <memory>

#include "train/optimizers/optimizer.h"

namespace sluice::train::optimizers {

// Keras' defaults.
struct RmspropOptions {
  float learning_rate = 0.001f;
  float rho = 0.9f;
  // Above 0: a momentum slot, b = momentum b + step, w -= b. At or below 0 there is none, as in
  // Keras.
  float momentum = 0.0f;
  float epsilon = 1e-7f;
  // Divide by the estimated variance of the gradient (v - mean(g)^2) instead of its second moment.
  bool centered = false;
  // Decoupled weight decay, as Keras 3's weight_decay argument: w -= learning_rate *
  // weight_decay * w before each step.
  float weight_decay = 0.0f;
};

// Keras RMSprop: v = rho v + (1 - rho) g^2, step = lr g / sqrt(v + epsilon) (centered:
// a = rho a + (1 - rho) g, step = lr g / sqrt(v - a^2 + epsilon)), w -= step or, with
// momentum, b = momentum b + step, w -= b. Keras puts epsilon inside the square root, PyTorch
// outside; this is Keras'. Its slots are "velocity", then "momentum" (with momentum) and
// "average_gradient" (centered).
class Rmsprop : public Optimizer {
 public:
  explicit Rmsprop(RmspropOptions options = {});
  // Keras' RMSprop(learning_rate, ...): `learning_rate` replaces options.learning_rate.
  explicit Rmsprop(float learning_rate, RmspropOptions options = {});
  // Keras' RMSprop(learning_rate=schedule): the rate follows `schedule`
  // (learning_rate_schedule.h).
  explicit Rmsprop(std::shared_ptr<const LearningRateSchedule> schedule,
                   RmspropOptions options = {});

 protected:
  StepValues ValuesAt(int64_t step, float learning_rate) const override;
  float weight_decay() const override { return options_.weight_decay; }
  backend::UpdateRule Rule() const override;
  std::array<int, backend::kMaxUpdateSlots> RuleSlots() const override;

 private:
  RmspropOptions options_;
  int momentum_slot_ = -1;          // index among the slots, -1 without momentum
  int average_gradient_slot_ = -1;  // -1 unless centered
};

// Keras' name.
using RMSprop = Rmsprop;

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_RMSPROP_H_
