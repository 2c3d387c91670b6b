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
  // "sgd", "adam", "adamw", "rmsprop", "adagrad", "adadelta", "adamax" or "nadam"
  // (kOptimizerNames), with Keras' defaults for what is not set here.
  std::string name = "adam";
  // Unset: the optimizer's default (DefaultLearningRate).
  std::optional<double> learning_rate;
  // SGD's and RMSprop's momentum, in [0, 1]; the others have none.
  double momentum = 0;
  // Decoupled weight decay, w -= lr * weight_decay * w each step. Unset: the optimizer's default
  // (adamw 0.004, the others 0).
  std::optional<double> weight_decay;
  // Clip the gradients to this global norm (0: not).
  double clip_norm = 0;
  ScheduleOptions schedule;
};

// The optimizers MakeOptimizer makes, by Keras' names in lower case.
inline constexpr const char* kOptimizerNames[] = {"sgd",     "adam",     "adamw",  "rmsprop",
                                                  "adagrad", "adadelta", "adamax", "nadam"};

// Keras' default learning rate of the optimizer `name`: sgd 0.01, every other 0.001 (TF2's
// defaults for adagrad, adadelta, adamax and nadam).
double DefaultLearningRate(const std::string& name);

// InvalidArgument when `options` names an optimizer or a schedule that MakeOptimizer does not
// know, or gives momentum to an optimizer without it: what it would refuse, checked without
// making anything.
absl::Status CheckOptimizerOptions(const OptimizerOptions& options);

// The optimizer `options` describes, its schedule set (MakeSchedule from its learning rate).
// InvalidArgument names an unknown optimizer or schedule.
absl::StatusOr<std::unique_ptr<optimizers::Optimizer>> MakeOptimizer(
    const OptimizerOptions& options);

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_OPTIMIZER_H_
