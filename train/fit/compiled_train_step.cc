#include "train/fit/compiled_train_step.h"

#include <optional>
#include <utility>

#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/fit/compiled_loss.h"
#include "train/fit/compiled_metrics.h"
#include "train/fit/step_phases.h"
#include "train/fit/step_strategy.h"

namespace sluice::train::fit {

CompiledTrainStep::CompiledTrainStep(StepParts parts, function::FunctionOptions options)
    : parts_(parts),
      vars_(parts.model.TrainableVariables()),
      function_([this](const std::vector<Tensor>& inputs) { return ForwardBackward(inputs); },
                std::move(options)) {}

absl::StatusOr<std::vector<Tensor>> CompiledTrainStep::ForwardBackward(
    const std::vector<Tensor>& inputs) {
  const Tensor& x = inputs[0];
  const Tensor& y = inputs[1];
  autodiff::Tape tape;
  Tensor y_pred;
  {
    backend::ScopedPrecision precision(parts_.precision);
    SLUICE_ASSIGN_OR_RETURN(y_pred, parts_.model.Forward(x, /*training=*/true));
  }
  ops::LabelRangeCheck check;
  SLUICE_ASSIGN_OR_RETURN(Tensor loss, parts_.loss.Compute(y, y_pred, check));
  label_classes_ = check.classes();
  std::vector<Tensor> outputs = {check.invalid_count() ? *check.invalid_count() : Tensor()};
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::optional<Tensor>> grads, tape.Gradient(loss, vars_));
  // The metrics before the update (the eager step runs them after it, on the same values): what
  // a trace refuses then comes before any variable changed, so Run can take the step back.
  SLUICE_RETURN_IF_ERROR(parts_.metrics.Update(loss, y, y_pred));
  if (optimizer_ != nullptr) {
    SLUICE_RETURN_IF_ERROR(optimizer_->UpdateVariables(grads, vars_));
  } else {
    for (std::optional<Tensor>& g : grads) outputs.push_back(g ? *std::move(g) : Tensor());
  }
  return outputs;
}

absl::Status CompiledTrainStep::Run(const Tensor& x, const Tensor& y, const std::string& where) {
  std::vector<autodiff::Variable*> vars = parts_.model.TrainableVariables();
  if (vars != vars_) {
    vars_ = std::move(vars);
    function_.Reset();  // the traces differentiate against the old list
  }
  optimizers::Optimizer* optimizer = parts_.strategy.TracedOptimizer();
  const int64_t generation = optimizer != nullptr ? optimizer->generation() : -1;
  if (optimizer != optimizer_ || generation != optimizer_generation_) {
    optimizer_ = optimizer;
    optimizer_generation_ = generation;
    function_.Reset();  // the traces update other slots, or none
  }
  SLUICE_RETURN_IF_ERROR(parts_.metrics.PrepareOn(parts_.model.device()));
  if (optimizer_ != nullptr) SLUICE_RETURN_IF_ERROR(optimizer_->PrepareStep(vars_));
  absl::StatusOr<std::vector<Tensor>> called = function_({x, y});
  if (!called.ok()) {
    // A refused trace stops before the update: the optimizer has not taken this step.
    if (optimizer_ != nullptr) optimizer_->CancelStep().IgnoreError();
    return called.status();
  }
  std::vector<Tensor> out = *std::move(called);
  parts_.phases.Mark("forward_backward");
  if (out[0].buffer()) {
    // The count is overwritten by the next replay: the deferred check keeps a copy of its own.
    SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(out[0].device()));
    SLUICE_ASSIGN_OR_RETURN(Tensor invalid, backend->Allocate(out[0].dtype(), out[0].shape()));
    SLUICE_RETURN_IF_ERROR(backend->Copy(out[0], invalid));
    parts_.loss.AddLabelCheck(where, ops::LabelRangeCheck(std::move(invalid), y, label_classes_));
  }
  if (optimizer_ == nullptr) {
    // The gradients came out of the step (the strategy's update is not traced).
    std::vector<std::optional<Tensor>> grads;
    for (size_t i = 1; i < out.size(); ++i) {
      grads.push_back(out[i].buffer() ? std::optional<Tensor>(out[i]) : std::nullopt);
    }
    SLUICE_RETURN_IF_ERROR(parts_.strategy.ApplyGradients(std::move(grads), vars_));
    parts_.phases.Mark("optimizer");
  }
  return absl::OkStatus();
}

}  // namespace sluice::train::fit
