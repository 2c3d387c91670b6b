#ifndef SLUICE_TRAIN_RECIPES_SCHEDULE_H_
#define SLUICE_TRAIN_RECIPES_SCHEDULE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "train/optimizers/learning_rate_schedule.h"

namespace sluice::train::recipes {

struct ScheduleOptions {
  // "constant", "cosine" (CosineDecay to 0 at the last step) or "step" (the rate divided by 10
  // after half the steps and by 100 after three quarters).
  std::string name = "constant";
  // The steps the optimizer will take in all (TrainImageClassifier counts them from the data).
  int64_t total_steps = 1;
  // A linear warmup from 0 over this many steps (LinearWarmup), before the decay's steps.
  int64_t warmup_steps = 0;
};

// InvalidArgument when `options` names no schedule MakeSchedule knows.
absl::Status CheckScheduleOptions(const ScheduleOptions& options);

// The learning-rate schedule `options` names, from `learning_rate`: nullptr for a constant rate
// without warmup (the optimizer's own rate). InvalidArgument for an unknown name.
absl::StatusOr<std::shared_ptr<const optimizers::LearningRateSchedule>> MakeSchedule(
    const ScheduleOptions& options, float learning_rate);

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_SCHEDULE_H_
