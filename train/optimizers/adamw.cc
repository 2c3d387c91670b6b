#include "train/optimizers/adamw.h"

namespace sluice::train::optimizers {

AdamW::AdamW(AdamWOptions options)
    : Adam({.learning_rate = options.learning_rate,
            .beta_1 = options.beta_1,
            .beta_2 = options.beta_2,
            .epsilon = options.epsilon,
            .weight_decay = options.weight_decay}) {}

AdamW::AdamW(float learning_rate, AdamWOptions options)
    : AdamW(WithLearningRate(options, learning_rate)) {}

AdamW::AdamW(std::shared_ptr<const LearningRateSchedule> schedule, AdamWOptions options)
    : AdamW(options) {
  set_schedule(std::move(schedule));
}

}  // namespace sluice::train::optimizers
