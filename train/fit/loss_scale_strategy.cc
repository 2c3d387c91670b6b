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

}  // namespace sluice::train::fit
