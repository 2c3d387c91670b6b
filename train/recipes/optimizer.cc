#include "train/recipes/optimizer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/optimizers/adam.h"
#include "train/optimizers/adamw.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::recipes {
namespace {

// Sgd, Adam or AdamW, whose name CheckOptimizerOptions has checked.
std::unique_ptr<optimizers::Optimizer> MakeUnscheduled(const OptimizerOptions& options, float lr) {
  const float weight_decay = static_cast<float>(options.weight_decay.value_or(0));
  if (options.name == "sgd") {
    return std::make_unique<optimizers::Sgd>(
        optimizers::SgdOptions{.learning_rate = lr,
                               .momentum = static_cast<float>(options.momentum),
                               .weight_decay = weight_decay});
  }
  if (options.name == "adam") {
    return std::make_unique<optimizers::Adam>(
        optimizers::AdamOptions{.learning_rate = lr, .weight_decay = weight_decay});
  }
  optimizers::AdamWOptions adamw{.learning_rate = lr};
  if (options.weight_decay) adamw.weight_decay = weight_decay;
  return std::make_unique<optimizers::AdamW>(adamw);
}

}  // namespace

absl::Status CheckOptimizerOptions(const OptimizerOptions& options) {
  if (options.name != "sgd" && options.name != "adam" && options.name != "adamw") {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer takes sgd, adam or adamw, not '", options.name, "'"));
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
