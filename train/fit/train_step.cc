#include "train/fit/train_step.h"

#include "absl/strings/str_cat.h"
#include "train/fit/compiled_loss.h"
#include "train/fit/compiled_metrics.h"
#include "train/fit/step_phases.h"
#include "train/fit/step_strategy.h"

namespace sluice::train::fit {

const losses::Loss& TrainStepContext::loss() const { return parts_.loss.loss(); }

absl::StatusOr<Tensor> TrainStepContext::ComputeLoss(const Tensor& y_pred) {
  return parts_.loss.Compute(y_, y_pred, where_);
}

absl::Status TrainStepContext::ApplyGradients(const std::vector<std::optional<Tensor>>& grads,
                                              const std::vector<autodiff::Variable*>& vars) {
  if (grads.size() != vars.size()) {
    return absl::InvalidArgumentError(absl::StrCat("ApplyGradients: ", grads.size(),
                                                   " gradients for ", vars.size(), " variables"));
  }
  return parts_.strategy.ApplyGradients(grads, vars);
}

absl::Status TrainStepContext::UpdateMetrics(const Tensor& loss, const Tensor& y_pred) {
  return parts_.metrics.Update(loss, y_, y_pred);
}

absl::Status CustomTrainStep::Run(const Tensor& x, const Tensor& y, const std::string& where) {
  TrainStepContext context(parts_, x, y, where);
  absl::Status status = fn_(context);
  parts_.phases.Mark("train_step");
  return status;
}

}  // namespace sluice::train::fit
