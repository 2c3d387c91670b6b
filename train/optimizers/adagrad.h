#ifndef SLUICE_TRAIN_OPTIMIZERS_ADAGRAD_H_
#define SLUICE_TRAIN_OPTIMIZERS_ADAGRAD_H_

#include <memory>

#include "train/optimizers/optimizer.h"

namespace sluice::train::optimizers {

// Keras' defaults (TF2 changed the learning rate's to 0.001).
struct AdagradOptions {
  float learning_rate = 0.001f;
  // What the accumulator starts at; Keras asks for it to be non-negative, and Apply refuses a
  // negative one.
  float initial_accumulator_value = 0.1f;
  float epsilon = 1e-7f;
  // Decoupled weight decay, as Keras 3's weight_decay argument: w -= learning_rate *
  // weight_decay * w before each step.
  float weight_decay = 0.0f;
};

// Keras Adagrad: a += g^2, w -= lr g / sqrt(a + epsilon), the accumulator a starting at
// initial_accumulator_value. (PyTorch's Adagrad starts it at 0 and adds epsilon outside the
// root.) Its slot is "accumulator".
class Adagrad : public Optimizer {
 public:
  explicit Adagrad(AdagradOptions options = {});
  // Keras' Adagrad(learning_rate, ...): `learning_rate` replaces options.learning_rate.
  explicit Adagrad(float learning_rate, AdagradOptions options = {});
  // Keras' Adagrad(learning_rate=schedule): the rate follows `schedule`
  // (learning_rate_schedule.h).
  explicit Adagrad(std::shared_ptr<const LearningRateSchedule> schedule,
                   AdagradOptions options = {});

 protected:
  StepValues ValuesAt(int64_t step, float learning_rate) const override;
  float weight_decay() const override { return options_.weight_decay; }
  backend::UpdateRule Rule() const override;
  absl::Status CheckOptions() const override;

 private:
  AdagradOptions options_;
};

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_ADAGRAD_H_
