#ifndef SLUICE_TRAIN_OPTIMIZERS_ADAMW_H_
#define SLUICE_TRAIN_OPTIMIZERS_ADAMW_H_

#include <memory>

#include "train/optimizers/adam.h"

namespace sluice::train::optimizers {

// Keras AdamW's defaults: Adam's, with weight decay 0.004.
struct AdamWOptions {
  float learning_rate = 0.001f;
  float weight_decay = 0.004f;
  float beta_1 = 0.9f;
  float beta_2 = 0.999f;
  float epsilon = 1e-7f;
};

// Keras AdamW (Loshchilov & Hutter's decoupled weight decay): each step first
// w -= learning_rate * weight_decay * w, then the Adam step on the gradient,
// which never sees the decay. Like Keras it decays every variable it is given,
// biases too, unless ExcludeFromWeightDecay names them.
class AdamW : public Adam {
 public:
  explicit AdamW(AdamWOptions options = {});
  // Keras' AdamW(learning_rate, ...): AdamW(0.01f), the other options after; `learning_rate`
  // replaces options.learning_rate.
  explicit AdamW(float learning_rate, AdamWOptions options = {});
  // Keras' AdamW(learning_rate=schedule): the rate follows `schedule`
  // (learning_rate_schedule.h).
  explicit AdamW(std::shared_ptr<const LearningRateSchedule> schedule, AdamWOptions options = {});
};

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_ADAMW_H_
