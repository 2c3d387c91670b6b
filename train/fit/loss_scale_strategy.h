#ifndef SLUICE_TRAIN_FIT_LOSS_SCALE_STRATEGY_H_
#define SLUICE_TRAIN_FIT_LOSS_SCALE_STRATEGY_H_

#include <memory>
#include <optional>
#include <vector>

#include "train/fit/step_strategy.h"
#include "train/fit/trainer_options.h"
#include "train/optimizers/dynamic_loss_scale.h"

namespace sluice::train::fit {

// Dynamic loss scaling (Keras' LossScaleOptimizer, PyTorch's GradScaler): the loss is multiplied
// by the scale before the backward pass, so that small float16 gradients do not flush to zero;
// the gradients are divided by it again, and a step whose gradients overflowed changes no
// variable and lowers the scale.
class LossScaleStrategy : public WrappingStrategy {
 public:
  // `scale` is not owned: the trainer keeps it across Fits, as Keras keeps it in the optimizer.
  LossScaleStrategy(optimizers::DynamicLossScale& scale, std::unique_ptr<StepStrategy> inner)
      : WrappingStrategy(std::move(inner)), scale_(scale) {}

  float LossFactor() const override { return scale_.scale() * WrappingStrategy::LossFactor(); }
  absl::Status ApplyGradients(std::vector<std::optional<Tensor>> grads,
                              const std::vector<autodiff::Variable*>& vars) override;
  void AddLogs(callbacks::Logs& logs) const override;

 private:
  optimizers::DynamicLossScale& scale_;
};

// Makes `scale` when `options` ask for loss scaling (TrainerOptions::loss_scale, or mixed_float16
// without it) and it is not made yet; InvalidArgument, saying why, where it cannot work: with a
// custom train_step, or with gradient accumulation.
absl::Status StartLossScaling(const TrainerOptions& options, int accumulation_steps,
                              std::optional<optimizers::DynamicLossScale>& scale);

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_LOSS_SCALE_STRATEGY_H_
