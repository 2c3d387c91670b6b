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

absl::Status Adadelta::Update(autodiff::Variable& var, const Tensor& grad, const Tensor& step) {
  Tensor& w = var.mutable_value();
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("Adadelta", {&w, &grad}));
  SLUICE_ASSIGN_OR_RETURN(Tensor * accumulated_grad, Slot(var, 0));
  SLUICE_ASSIGN_OR_RETURN(Tensor * accumulated_delta, Slot(var, 1));
  return backend->AdadeltaUpdate(w, grad, *accumulated_grad, *accumulated_delta, step, options_.rho,
                                 options_.epsilon);
}

Adadelta::Adadelta(float learning_rate, AdadeltaOptions options)
    : Adadelta(WithLearningRate(options, learning_rate)) {}

Adadelta::Adadelta(std::shared_ptr<const LearningRateSchedule> schedule, AdadeltaOptions options)
    : Adadelta(options) {
  set_schedule(std::move(schedule));
}

}  // namespace sluice::train::optimizers
