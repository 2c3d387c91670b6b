#include "train/optimizers/adadelta.h"

#include <utility>

#include "core/status_macros.h"
#include "train/backend/backend.h"

namespace sluice::train::optimizers {

Adadelta::Adadelta(AdadeltaOptions options)
    : Optimizer(options.learning_rate, {"accumulated_grad", "accumulated_delta_var"}),
      options_(options) {}

Optimizer::StepValues Adadelta::ValuesAt(int64_t, float lr) const {
  return {.rate = lr, .decay = lr * options_.weight_decay};
}

backend::UpdateRule Adadelta::Rule() const {
  return {.kind = backend::UpdateKind::kAdadelta, .rho = options_.rho, .epsilon = options_.epsilon};
}

Adadelta::Adadelta(float learning_rate, AdadeltaOptions options)
    : Adadelta(WithLearningRate(options, learning_rate)) {}

Adadelta::Adadelta(std::shared_ptr<const LearningRateSchedule> schedule, AdadeltaOptions options)
    : Adadelta(options) {
  set_schedule(std::move(schedule));
}

}  // namespace sluice::train::optimizers
