#ifndef SLUICE_TRAIN_RECIPES_OPTIMIZER_H_
#define SLUICE_TRAIN_RECIPES_OPTIMIZER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "train/optimizers/optimizer.h"
#include "train/recipes/schedule.h"

namespace sluice::train::recipes {

struct OptimizerOptions {
  // "sgd", "adam" or "adamw", with Keras' defaults for what is not set here.
  std::string name = "adam";
  // Unset: the optimizer's default (DefaultLearningRate).
  std::optional<double> learning_rate;
  // SGD's momentum.
  double momentum = 0;
  // Decoupled weight decay, w -= lr * weight_decay * w each step. Unset: the optimizer's default
  // (adamw 0.004, the others 0).
  std::optional<double> weight_decay;
  // Clip the gradients to this global norm (0: not).
  double clip_norm = 0;
  ScheduleOptions schedule;
};

// Keras' default learning rate of the optimizer `name`: sgd 0.01, adam and adamw 0.001.
double DefaultLearningRate(const std::string& name);

// InvalidArgument when `options` names an optimizer or a schedule that MakeOptimizer does not
// know: what it would refuse, checked without making anything.
absl::Status CheckOptimizerOptions(const OptimizerOptions& options);

// The optimizer `options` describes, its schedule set (MakeSchedule from its learning rate).
// InvalidArgument names an unknown optimizer or schedule.
absl::StatusOr<std::unique_ptr<optimizers::Optimizer>> MakeOptimizer(
    const OptimizerOptions& options);

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_OPTIMIZER_H_
