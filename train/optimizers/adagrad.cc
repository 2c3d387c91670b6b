#include "train/optimizers/adagrad.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"

namespace sluice::train::optimizers {

Adagrad::Adagrad(AdagradOptions options)
    : Optimizer(options.learning_rate, {"accumulator"}, {options.initial_accumulator_value}),
      options_(options) {}

Optimizer::StepValues Adagrad::ValuesAt(int64_t, float lr) const {
  return {.rate = lr, .decay = lr * options_.weight_decay};
}

absl::Status Adagrad::CheckOptions() const {
  // A negative start would take square roots of negative sums: NaN weights, silently.
  if (!(options_.initial_accumulator_value >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Adagrad: initial_accumulator_value must be >= 0 (Keras' rule), not ",
                     options_.initial_accumulator_value));
  }
  return absl::OkStatus();
}

backend::UpdateRule Adagrad::Rule() const {
  return {.kind = backend::UpdateKind::kAdagrad, .epsilon = options_.epsilon};
}

Adagrad::Adagrad(float learning_rate, AdagradOptions options)
    : Adagrad(WithLearningRate(options, learning_rate)) {}

Adagrad::Adagrad(std::shared_ptr<const LearningRateSchedule> schedule, AdagradOptions options)
    : Adagrad(options) {
  set_schedule(std::move(schedule));
}

}  // namespace sluice::train::optimizers
