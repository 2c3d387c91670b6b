#include "train/recipes/schedule.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice::train::recipes {

absl::Status CheckScheduleOptions(const ScheduleOptions& options) {
  if (options.name == "constant" || options.name == "cosine" || options.name == "step") {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("schedule takes constant, cosine or step, not '", options.name, "'"));
}

absl::StatusOr<std::shared_ptr<const optimizers::LearningRateSchedule>> MakeSchedule(
    const ScheduleOptions& options, float learning_rate) {
  SLUICE_RETURN_IF_ERROR(CheckScheduleOptions(options));
  const float lr = learning_rate;
  std::shared_ptr<const optimizers::LearningRateSchedule> schedule;
  const int64_t decay_steps = std::max<int64_t>(1, options.total_steps - options.warmup_steps);
  if (options.name == "cosine") {
    schedule = std::make_shared<optimizers::CosineDecay>(
        optimizers::CosineDecayOptions{.initial_learning_rate = lr, .decay_steps = decay_steps});
  } else if (options.name == "step") {
    // A tenth of the rate after half the steps, a hundredth after three quarters.
    SLUICE_ASSIGN_OR_RETURN(
        schedule, optimizers::PiecewiseConstantDecay::Create(
                      {decay_steps / 2, std::max(decay_steps / 2 + 1, decay_steps * 3 / 4)},
                      {lr, lr / 10, lr / 100}));
  }
  if (options.warmup_steps > 0) {
    if (!schedule) {
      SLUICE_ASSIGN_OR_RETURN(schedule, optimizers::PiecewiseConstantDecay::Create({}, {lr}));
    }
    schedule = std::make_shared<optimizers::LinearWarmup>(schedule, options.warmup_steps, 0.0);
  }
  return schedule;
}

}  // namespace sluice::train::recipes
