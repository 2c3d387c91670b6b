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

absl::Status Adam::Update(autodiff::Variable& var, const Tensor& grad, const Tensor& step) {
  Tensor& w = var.mutable_value();
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("Adam", {&w, &grad}));
  SLUICE_ASSIGN_OR_RETURN(Tensor * m, Slot(var, 0));
  SLUICE_ASSIGN_OR_RETURN(Tensor * v, Slot(var, 1));
  return backend->AdamUpdate(w, grad, *m, *v, step, options_.beta_1, options_.beta_2,
                             options_.epsilon);
}

Adam::Adam(float learning_rate, AdamOptions options)
    : Adam(WithLearningRate(options, learning_rate)) {}

Adam::Adam(std::shared_ptr<const LearningRateSchedule> schedule, AdamOptions options)
    : Adam(options) {
  set_schedule(std::move(schedule));
}

}  // namespace sluice::train::optimizers
