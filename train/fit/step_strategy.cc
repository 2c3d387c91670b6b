#include "train/fit/step_strategy.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "train/fit/data_parallel_strategy.h"
#include "train/fit/gradient_accumulation_strategy.h"
#include "train/fit/loss_scale_strategy.h"

namespace sluice::train::fit {

absl::Status LocalStrategy::RestoreState(const RankPosition& position, absl::string_view where) {
  if (position.accumulated_steps == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      where, ": holds the gradients of ", position.accumulated_steps, " of ",
      position.accumulation_steps, " accumulated micro-batches: resume with accumulation_steps ",
      position.accumulation_steps, " (sluice train --accumulate ", position.accumulation_steps,
      ")"));
}

std::unique_ptr<StepStrategy> MakeStepStrategy(optimizers::Optimizer& optimizer,
                                               const StepStrategyOptions& options) {
  std::unique_ptr<StepStrategy> strategy = std::make_unique<LocalStrategy>(optimizer);
  if (options.loss_scale != nullptr) {
    strategy = std::make_unique<LossScaleStrategy>(*options.loss_scale, std::move(strategy));
  }
  const bool accumulates = options.accumulation_steps > 1;
  if (options.data_parallel != nullptr) {
    strategy = std::make_unique<DataParallelStrategy>(
        *options.data_parallel, options.reduce_during_backward && !accumulates,
        std::move(strategy));
  }
  if (accumulates) {
    strategy = std::make_unique<GradientAccumulationStrategy>(options.accumulation_steps,
                                                              std::move(strategy));
  }
  return strategy;
}

}  // namespace sluice::train::fit
