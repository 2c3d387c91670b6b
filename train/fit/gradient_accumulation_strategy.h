#ifndef SLUICE_TRAIN_FIT_GRADIENT_ACCUMULATION_STRATEGY_H_
#define SLUICE_TRAIN_FIT_GRADIENT_ACCUMULATION_STRATEGY_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
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
  // The partial sums, copied to the host, by the names of the variables they belong to (as Keras
  // 3 keeps its accumulators among the optimizer's variables).
  absl::Status SaveState(RankPosition& position) const override;
  // Keeps the saved sums until the next ApplyGradients, which has the variables to match them
  // to and moves them to their device.
  absl::Status RestoreState(const RankPosition& position, absl::string_view where) override;

 private:
  // The restored sums, in the order of `vars`.
  absl::Status TakeRestored(const std::vector<autodiff::Variable*>& vars);

  optimizers::GradientAccumulator accumulator_;
  int accumulated_ = 0;             // micro-batches summed since the last update
  std::vector<std::string> names_;  // of the variables the sums belong to
  // From RestoreState, until the next ApplyGradients: how many micro-batches, their sums by
  // name, and the checkpoint's name for errors.
  int restored_steps_ = 0;
  std::vector<std::pair<std::string, Tensor>> restored_sums_;
  std::string restored_from_;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_GRADIENT_ACCUMULATION_STRATEGY_H_
