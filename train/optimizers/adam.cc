#include "train/optimizers/adam.h"

#include <cmath>

#include "core/status_macros.h"
#include "train/backend/backend.h"

namespace sluice::train::optimizers {

Adam::Adam(AdamOptions options) : Optimizer(options.learning_rate, {"m", "v"}), options_(options) {}

Optimizer::StepValues Adam::ValuesAt(int64_t step, float lr) const {
  const double t = static_cast<double>(step);
  const float alpha = static_cast<float>(lr * std::sqrt(1 - std::pow(options_.beta_2, t)) /
                                         (1 - std::pow(options_.beta_1, t)));
  return {.rate = alpha, .decay = lr * options_.weight_decay};
}

backend::UpdateRule Adam::Rule() const {
  return {.kind = backend::UpdateKind::kAdam,
          .beta_1 = options_.beta_1,
          .beta_2 = options_.beta_2,
          .epsilon = options_.epsilon};
}

Adam::Adam(float learning_rate, AdamOptions options)
    : Adam(WithLearningRate(options, learning_rate)) {}

Adam::Adam(std::shared_ptr<const LearningRateSchedule> schedule, AdamOptions options)
    : Adam(options) {
  set_schedule(std::move(schedule));
}

}  // namespace sluice::train::optimizers
