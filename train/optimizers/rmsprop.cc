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

backend::UpdateRule Rmsprop::Rule() const {
  return {.kind = backend::UpdateKind::kRmsprop,
          .momentum = momentum_slot_ >= 0 ? options_.momentum : 0.0f,
          .rho = options_.rho,
          .centered = average_gradient_slot_ >= 0,
          .epsilon = options_.epsilon};
}

std::array<int, backend::kMaxUpdateSlots> Rmsprop::RuleSlots() const {
  return {0, average_gradient_slot_, momentum_slot_};
}

Rmsprop::Rmsprop(float learning_rate, RmspropOptions options)
    : Rmsprop(WithLearningRate(options, learning_rate)) {}

Rmsprop::Rmsprop(std::shared_ptr<const LearningRateSchedule> schedule, RmspropOptions options)
    : Rmsprop(options) {
  set_schedule(std::move(schedule));
}

}  // namespace sluice::train::optimizers
