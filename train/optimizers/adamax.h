#ifndef SLUICE_TRAIN_OPTIMIZERS_ADAMAX_H_
#define SLUICE_TRAIN_OPTIMIZERS_ADAMAX_H_

#include <memory>

#include "train/optimizers/optimizer.h"

namespace sluice::train::optimizers {

// Keras' defaults (TF2 changed the learning rate's to 0.001).
struct AdamaxOptions {
  float learning_rate = 0.001f;
  float beta_1 = 0.9f;
  float beta_2 = 0.999f;
  float epsilon = 1e-7f;
  // Decoupled weight decay, as Keras 3's weight_decay argument: w -= learning_rate *
  // weight_decay * w before each step.
  float weight_decay = 0.0f;
};

// Keras Adamax (Adam with the infinity norm): m += (g - m)(1 - beta_1),
// u = max(beta_2 u, |g|), w -= lr / (1 - beta_1^t) * m / (u + epsilon). PyTorch's Adamax puts
// epsilon inside the max instead: u = max(beta_2 u, |g| + epsilon). Its slots are "momentum"
// (m) and "norm" (u).
class Adamax : public Optimizer {
 public:
  explicit Adamax(AdamaxOptions options = {});
  // Keras' Adamax(learning_rate, ...): `learning_rate` replaces options.learning_rate.
  explicit Adamax(float learning_rate, AdamaxOptions options = {});
  // Keras' Adamax(learning_rate=schedule): the rate follows `schedule`
  // (learning_rate_schedule.h).
  explicit Adamax(std::shared_ptr<const LearningRateSchedule> schedule, AdamaxOptions options = {});

 protected:
  StepValues ValuesAt(int64_t step, float learning_rate) const override;
  float weight_decay() const override { return options_.weight_decay; }
  backend::UpdateRule Rule() const override;

 private:
  AdamaxOptions options_;
};

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_ADAMAX_H_
