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

absl::Status Sgd::Update(autodiff::Variable& var, const Tensor& grad, const Tensor& step) {
  Tensor& w = var.mutable_value();
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("Sgd", {&w, &grad}));
  Tensor* velocity = nullptr;
  if (options_.momentum != 0) {
    SLUICE_ASSIGN_OR_RETURN(velocity, Slot(var, 0));
  }
  return backend->SgdUpdate(w, grad, velocity, step, options_.momentum, options_.nesterov);
}

Sgd::Sgd(float learning_rate, SgdOptions options) : Sgd(WithLearningRate(options, learning_rate)) {}

Sgd::Sgd(std::shared_ptr<const LearningRateSchedule> schedule, SgdOptions options) : Sgd(options) {
  set_schedule(std::move(schedule));
}

}  // namespace sluice::train::optimizers
