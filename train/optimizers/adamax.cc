#include "train/optimizers/adamax.h"

#include <cmath>
#include <utility>

#include "core/status_macros.h"
#include "train/backend/backend.h"

namespace sluice::train::optimizers {

Adamax::Adamax(AdamaxOptions options)
    : Optimizer(options.learning_rate, {"momentum", "norm"}), options_(options) {}

Optimizer::StepValues Adamax::ValuesAt(int64_t step, float lr) const {
  const float alpha = static_cast<float>(
      lr / (1 - std::pow(static_cast<double>(options_.beta_1), static_cast<double>(step))));
  return {.rate = alpha, .decay = lr * options_.weight_decay};
}

backend::UpdateRule Adamax::Rule() const {
  return {.kind = backend::UpdateKind::kAdamax,
          .beta_1 = options_.beta_1,
          .beta_2 = options_.beta_2,
          .epsilon = options_.epsilon};
}

Adamax::Adamax(float learning_rate, AdamaxOptions options)
    : Adamax(WithLearningRate(options, learning_rate)) {}

Adamax::Adamax(std::shared_ptr<const LearningRateSchedule> schedule, AdamaxOptions options)
    : Adamax(options) {
  set_schedule(std::move(schedule));
}

}  // namespace sluice::train::optimizers
