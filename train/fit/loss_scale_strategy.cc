#include "train/fit/loss_scale_strategy.h"

#include <utility>

#include "core/status_macros.h"

namespace sluice::train::fit {

absl::Status LossScaleStrategy::ApplyGradients(std::vector<std::optional<Tensor>> grads,
                                               const std::vector<autodiff::Variable*>& vars) {
  SLUICE_ASSIGN_OR_RETURN(const bool finite, scale_.UnscaleAndUpdate(grads));
  if (!finite) return absl::OkStatus();  // Keras' LossScaleOptimizer skips the step
  return inner().ApplyGradients(std::move(grads), vars);
}

void LossScaleStrategy::AddLogs(callbacks::Logs& logs) const {
  logs["loss_scale"] = scale_.scale();
  WrappingStrategy::AddLogs(logs);
}

absl::Status StartLossScaling(const TrainerOptions& options, int accumulation_steps,
                              std::optional<optimizers::DynamicLossScale>& scale) {
  std::optional<optimizers::DynamicLossScaleOptions> wanted = options.loss_scale;
  if (!wanted && options.precision == backend::Precision::kMixedFloat16) wanted.emplace();
  if (!wanted) return absl::OkStatus();
  if (options.train_step) {
    return absl::InvalidArgumentError(
        "loss scaling (mixed_float16) with a custom train_step is not supported: the step "
        "computes its own loss; scale it there, or leave loss_scale unset");
  }
  if (accumulation_steps > 1) {
    return absl::InvalidArgumentError(
        "loss scaling (mixed_float16) with gradient accumulation is not supported: an overflow "
        "in one micro-batch would have to drop the whole accumulated step");
  }
  if (scale) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(scale, optimizers::DynamicLossScale::Create(*wanted));
  return absl::OkStatus();
}

}  // namespace sluice::train::fit
