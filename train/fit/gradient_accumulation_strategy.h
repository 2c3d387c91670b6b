#ifndef SLUICE_TRAIN_FIT_GRADIENT_ACCUMULATION_STRATEGY_H_
#define SLUICE_TRAIN_FIT_GRADIENT_ACCUMULATION_STRATEGY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "train/fit/step_strategy.h"
#include "train/optimizers/gradient_accumulator.h"

namespace sluice::train::fit {

// Gradient accumulation: the gradients of `steps` micro-batches are summed, and only their mean
// goes on to the inner strategy (data-parallel: only the mean crosses the network).
class GradientAccumulationStrategy : public WrappingStrategy {
 public:
  GradientAccumulationStrategy(int steps, std::unique_ptr<StepStrategy> inner)
      : WrappingStrategy(std::move(inner)), accumulator_(steps) {}

  // The inner strategy's hook would see micro-batches: none.
  autodiff::Tape::GradientReadyFn BeginBackward(
      const std::vector<autodiff::Variable*>& vars) override {
    return nullptr;
  }
  absl::Status ApplyGradients(std::vector<std::optional<Tensor>> grads,
                              const std::vector<autodiff::Variable*>& vars) override;
  // Its partial sums are not saved: FailedPrecondition inside an accumulation.
  absl::Status CheckCanSave(const std::string& path, int64_t global_step) const override;

 private:
  optimizers::GradientAccumulator accumulator_;
  int accumulated_ = 0;  // micro-batches summed since the last update
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_GRADIENT_ACCUMULATION_STRATEGY_H_
