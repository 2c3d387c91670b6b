#ifndef SLUICE_TRAIN_OPTIMIZERS_ADAM_H_
#define SLUICE_TRAIN_OPTIMIZERS_ADAM_H_

#include <memory>

#include "train/optimizers/optimizer.h"

namespace sluice::train::optimizers {

// Keras' defaults.
struct AdamOptions {
  float learning_rate = 0.001f;
  float beta_1 = 0.9f;
  float beta_2 = 0.999f;
  float epsilon = 1e-7f;
  // Decoupled weight decay, as Keras 3's weight_decay argument (AdamW sets it):
  // w -= learning_rate * weight_decay * w before the Adam step.
  float weight_decay = 0.0f;
};

// Keras Adam: m += (g - m)(1 - b1), v += (g^2 - v)(1 - b2),
// w -= lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps). Keras puts
// epsilon outside the bias correction of v; so do we, to match its steps.
// Its slots are "m" and "v".
class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {});
  // Keras' Adam(learning_rate, ...): Adam(0.01f), the other options after; `learning_rate`
  // replaces options.learning_rate.
  explicit Adam(float learning_rate, AdamOptions options = {});
  // Keras' Adam(learning_rate=schedule): the rate follows `schedule`
  // (learning_rate_schedule.h).
  explicit Adam(std::shared_ptr<const LearningRateSchedule> schedule, AdamOptions options = {});

 protected:
  StepValues ValuesAt(int64_t step, float learning_rate) const override;
  float weight_decay() const override { return options_.weight_decay; }
  backend::UpdateRule Rule() const override;

 private:
  AdamOptions options_;
};

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_ADAM_H_
