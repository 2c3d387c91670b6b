#include "train/fit/step_strategy.h"

#include <utility>

#include "train/fit/data_parallel_strategy.h"
#include "train/fit/gradient_accumulation_strategy.h"
#include "train/fit/loss_scale_strategy.h"

namespace sluice::train::fit {

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
