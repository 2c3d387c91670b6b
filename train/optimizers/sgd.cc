#include "train/optimizers/sgd.h"

#include "core/status_macros.h"
#include "train/backend/backend.h"

namespace sluice::train::optimizers {

Sgd::Sgd(SgdOptions options)
    : Optimizer(options.learning_rate, options.momentum == 0
                                           ? std::vector<std::string>{}
                                           : std::vector<std::string>{"velocity"}),
      options_(options) {}

Optimizer::StepValues Sgd::ValuesAt(int64_t, float lr) const {
  return {.rate = lr, .decay = lr * options_.weight_decay};
}

backend::UpdateRule Sgd::Rule() const {
  return {.kind = backend::UpdateKind::kSgd,
          .momentum = options_.momentum,
          .nesterov = options_.nesterov};
}

Sgd::Sgd(float learning_rate, SgdOptions options) : Sgd(WithLearningRate(options, learning_rate)) {}

Sgd::Sgd(std::shared_ptr<const LearningRateSchedule> schedule, SgdOptions options) : Sgd(options) {
  set_schedule(std::move(schedule));
}

}  // namespace sluice::train::optimizers
