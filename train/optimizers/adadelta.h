#ifndef SLUICE_TRAIN_OPTIMIZERS_ADADELTA_H_
#define SLUICE_TRAIN_OPTIMIZERS_ADADELTA_H_

#include <memory>

#include "train/optimizers/optimizer.h"

namespace sluice::train::optimizers {

// Keras' defaults (TF2 changed the learning rate's to 0.001; Zeiler's paper has 1.0).
struct AdadeltaOptions {
  float learning_rate = 0.001f;
  float rho = 0.95f;
  float epsilon = 1e-7f;
  // Decoupled weight decay, as Keras 3's weight_decay argument: w -= learning_rate *
  // weight_decay * w before each step.
  float weight_decay = 0.0f;
};

// Keras Adadelta: a = rho a + (1 - rho) g^2, d = -sqrt(ad + epsilon) / sqrt(a + epsilon) g,
// ad = rho ad + (1 - rho) d^2, w += lr d. PyTorch's Adadelta is the same rule. Its slots are
// "accumulated_grad" (a) and "accumulated_delta_var" (ad).
class Adadelta : public Optimizer {
 public:
  explicit Adadelta(AdadeltaOptions options = {});
  // Keras' Adadelta(learning_rate, ...): `learning_rate` replaces options.learning_rate.
  explicit Adadelta(float learning_rate, AdadeltaOptions options = {});
  // Keras' Adadelta(learning_rate=schedule): the rate follows `schedule`
  // (learning_rate_schedule.h).
  explicit Adadelta(std::shared_ptr<const LearningRateSchedule> schedule,
                    AdadeltaOptions options = {});

 protected:
  StepValues ValuesAt(int64_t step, float learning_rate) const override;
  float weight_decay() const override { return options_.weight_decay; }
  backend::UpdateRule Rule() const override;

 private:
  AdadeltaOptions options_;
};

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_ADADELTA_H_
