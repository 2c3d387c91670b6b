#include "train/recipes/optimizer.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "train/optimizers/adadelta.h"
#include "train/optimizers/adagrad.h"
#include "train/optimizers/adam.h"
#include "train/optimizers/adamax.h"
#include "train/optimizers/adamw.h"
#include "train/optimizers/nadam.h"
#include "train/optimizers/rmsprop.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::recipes {
namespace {

// The optimizer `options.name` names, which CheckOptimizerOptions has checked.
std::unique_ptr<optimizers::Optimizer> MakeUnscheduled(const OptimizerOptions& options, float lr) {
  const float weight_decay = static_cast<float>(options.weight_decay.value_or(0));
  const auto momentum = static_cast<float>(options.momentum);
  const std::string& name = options.name;
  if (name == "sgd") {
    return std::make_unique<optimizers::Sgd>(optimizers::SgdOptions{
        .learning_rate = lr, .momentum = momentum, .weight_decay = weight_decay});
  }
  if (name == "adam") {
    return std::make_unique<optimizers::Adam>(
        optimizers::AdamOptions{.learning_rate = lr, .weight_decay = weight_decay});
  }
  if (name == "rmsprop") {
    return std::make_unique<optimizers::Rmsprop>(optimizers::RmspropOptions{
        .learning_rate = lr, .momentum = momentum, .weight_decay = weight_decay});
  }
  if (name == "adagrad") {
    return std::make_unique<optimizers::Adagrad>(
        optimizers::AdagradOptions{.learning_rate = lr, .weight_decay = weight_decay});
  }
  if (name == "adadelta") {
    return std::make_unique<optimizers::Adadelta>(
        optimizers::AdadeltaOptions{.learning_rate = lr, .weight_decay = weight_decay});
  }
  if (name == "adamax") {
    return std::make_unique<optimizers::Adamax>(
        optimizers::AdamaxOptions{.learning_rate = lr, .weight_decay = weight_decay});
  }
  if (name == "nadam") {
    return std::make_unique<optimizers::Nadam>(
        optimizers::NadamOptions{.learning_rate = lr, .weight_decay = weight_decay});
  }
  optimizers::AdamWOptions adamw{.learning_rate = lr};
  if (options.weight_decay) adamw.weight_decay = weight_decay;
  return std::make_unique<optimizers::AdamW>(adamw);
}

}  // namespace

absl::Status CheckOptimizerOptions(const OptimizerOptions& options) {
  if (std::find(std::begin(kOptimizerNames), std::end(kOptimizerNames), options.name) ==
      std::end(kOptimizerNames)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer takes ", absl::StrJoin(kOptimizerNames, ", "), ", not '", options.name, "'"));
  }
  if (options.momentum != 0 && options.name != "sgd" && options.name != "rmsprop") {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer ", options.name,
                     " has no momentum (sgd and rmsprop do), but momentum is ", options.momentum));
  }
  if (!(options.momentum >= 0 && options.momentum <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer momentum must lie in [0, 1], not ", options.momentum));
  }
  return CheckScheduleOptions(options.schedule);
}

double DefaultLearningRate(const std::string& name) { return name == "sgd" ? 0.01 : 0.001; }

absl::StatusOr<std::unique_ptr<optimizers::Optimizer>> MakeOptimizer(
    const OptimizerOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckOptimizerOptions(options));
  const float lr =
      static_cast<float>(options.learning_rate.value_or(DefaultLearningRate(options.name)));
  std::unique_ptr<optimizers::Optimizer> optimizer = MakeUnscheduled(options, lr);
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const optimizers::LearningRateSchedule> schedule,
                          MakeSchedule(options.schedule, lr));
  if (schedule) optimizer->set_schedule(std::move(schedule));
  if (options.clip_norm > 0) optimizer->set_clip_global_norm(static_cast<float>(options.clip_norm));
  return optimizer;
}

}  // namespace sluice::train::recipes
