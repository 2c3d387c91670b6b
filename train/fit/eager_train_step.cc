#include "train/fit/eager_train_step.h"

#include <utility>
#include <vector>

#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/backend/transfer.h"
#include "train/fit/compiled_loss.h"
#include "train/fit/compiled_metrics.h"
#include "train/fit/step_phases.h"
#include "train/fit/step_strategy.h"
#include "train/ops/arithmetic.h"

namespace sluice::train::fit {

absl::Status EagerTrainStep::Run(const Tensor& x, const Tensor& y, const std::string& where) {
  const std::vector<autodiff::Variable*> vars = parts_.model.TrainableVariables();
  std::vector<std::optional<Tensor>> grads;
  Tensor y_pred;
  Tensor loss;
  {
    autodiff::Tape tape;
    {
      backend::ScopedPrecision precision(parts_.precision);
      SLUICE_ASSIGN_OR_RETURN(y_pred, parts_.model.Forward(x, /*training=*/true));
    }
    parts_.phases.Mark("forward");
    SLUICE_ASSIGN_OR_RETURN(loss, parts_.loss.Compute(y, y_pred, where));
    const float factor = parts_.strategy.LossFactor();
    Tensor scaled = loss;
    if (factor != 1.0f) {
      SLUICE_ASSIGN_OR_RETURN(scaled, Scale(loss, factor));
    }
    parts_.phases.Mark("loss");
    autodiff::Tape::GradientReadyFn on_ready = parts_.strategy.BeginBackward(vars);
    SLUICE_ASSIGN_OR_RETURN(grads, tape.Gradient(scaled, vars, std::nullopt, on_ready));
  }
  parts_.phases.Mark("backward");
  SLUICE_RETURN_IF_ERROR(parts_.strategy.ApplyGradients(std::move(grads), vars));
  parts_.phases.Mark("optimizer");
  absl::Status status = parts_.metrics.Update(loss, y, y_pred);
  parts_.phases.Mark("metrics");
  return status;
}

absl::StatusOr<Tensor> EagerTrainStep::Scale(const Tensor& loss, float factor) {
  if (!factor_ || !(factor_->device() == loss.device()) || factor_value_ != factor) {
    SLUICE_ASSIGN_OR_RETURN(factor_, backend::CopyTo(Tensor::Scalar<float>(factor), loss.device()));
    factor_value_ = factor;
  }
  return ops::Mul(loss, *factor_);
}

}  // namespace sluice::train::fit
