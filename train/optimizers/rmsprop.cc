#include "train/optimizers/rmsprop.h"

#include <string>
#include <utility>
#include <vector>

#include "core/status_macros.h"
#include "train/backend/backend.h"

namespace sluice::train::optimizers {
namespace {

// Keras' order: velocity, momentum (when momentum > 0), average_gradient (when centered).
std::vector<std::string> SlotNames(const RmspropOptions& options) {
  std::vector<std::string> names = {"velocity"};
  if (options.momentum > 0) names.push_back("momentum");
  if (options.centered) names.push_back("average_gradient");
  return names;
}

}  // namespace

Rmsprop::Rmsprop(RmspropOptions options)
    : Optimizer(options.learning_rate, SlotNames(options)), options_(options) {
  int next = 1;
  if (options_.momentum > 0) momentum_slot_ = next++;
  if (options_.centered) average_gradient_slot_ = next++;
}

Optimizer::StepValues Rmsprop::ValuesAt(int64_t, float lr) const {
  return {.rate = lr, .decay = lr * options_.weight_decay};
}

absl::Status Rmsprop::Update(autodiff::Variable& var, const Tensor& grad, const Tensor& step) {
  Tensor& w = var.mutable_value();
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("RMSprop", {&w, &grad}));
  SLUICE_ASSIGN_OR_RETURN(Tensor * velocity, Slot(var, 0));
  Tensor* momentum = nullptr;
  if (momentum_slot_ >= 0) {
    SLUICE_ASSIGN_OR_RETURN(momentum, Slot(var, momentum_slot_));
  }
  Tensor* average_gradient = nullptr;
  if (average_gradient_slot_ >= 0) {
    SLUICE_ASSIGN_OR_RETURN(average_gradient, Slot(var, average_gradient_slot_));
  }
  return backend->RmspropUpdate(w, grad, *velocity, average_gradient, momentum, step, options_.rho,
                                momentum != nullptr ? options_.momentum : 0.0f, options_.epsilon);
}

Rmsprop::Rmsprop(float learning_rate, RmspropOptions options)
    : Rmsprop(WithLearningRate(options, learning_rate)) {}

Rmsprop::Rmsprop(std::shared_ptr<const LearningRateSchedule> schedule, RmspropOptions options)
    : Rmsprop(options) {
  set_schedule(std::move(schedule));
}

}  // namespace sluice::train::optimizers
