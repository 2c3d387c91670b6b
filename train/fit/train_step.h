#ifndef SLUICE_TRAIN_FIT_TRAIN_STEP_H_
#define SLUICE_TRAIN_FIT_TRAIN_STEP_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "train/autodiff/variable.h"
#include "train/backend/compute_precision.h"
#include "train/layers/module.h"
#include "train/losses/loss.h"
#include "train/optimizers/optimizer.h"

namespace sluice::train::fit {

class CompiledLoss;
class CompiledMetrics;
class StepPhases;
class StepStrategy;

// What a training step works with, all owned by the trainer.
struct StepParts {
  layers::Module& model;
  optimizers::Optimizer& optimizer;
  CompiledLoss& loss;
  CompiledMetrics& metrics;
  StepStrategy& strategy;
  StepPhases& phases;
  backend::Precision precision;
};

// One training step on one batch, as Fit runs it (Keras' Model.train_step): the built-in eager
// step (EagerTrainStep), a custom TrainStepFn (CustomTrainStep), or a traced one replayed.
// Fit does everything around it: reading and prefetching, callbacks, progress, checkpoints.
class TrainStep {
 public:
  virtual ~TrainStep() = default;
  // `x` and `y` are on the model's device; `where` names the step in errors found later.
  virtual absl::Status Run(const Tensor& x, const Tensor& y, const std::string& where) = 0;
};

// What a custom training step gets (TrainerOptions::train_step, Keras' overridden
// Model.train_step): the batch on the model's device, the model, the optimizer and the compiled
// loss, and the three things Keras' train_step calls on `self`. Fit still does everything
// around the step: reading and prefetching, callbacks, progress, checkpoints, TensorBoard.
//
//   [](TrainStepContext& ctx) -> absl::Status {
//     autodiff::Tape tape;
//     SLUICE_ASSIGN_OR_RETURN(Tensor y_pred, ctx.model().Forward(ctx.x(), /*training=*/true));
//     SLUICE_ASSIGN_OR_RETURN(Tensor loss, ctx.ComputeLoss(y_pred));
//     auto vars = ctx.model().TrainableVariables();
//     SLUICE_ASSIGN_OR_RETURN(auto grads, tape.Gradient(loss, vars));
//     SLUICE_RETURN_IF_ERROR(ctx.ApplyGradients(grads, vars));
//     return ctx.UpdateMetrics(loss, y_pred);
//   }
class TrainStepContext {
 public:
  const Tensor& x() const { return x_; }
  const Tensor& y() const { return y_; }
  layers::Module& model() { return parts_.model; }
  optimizers::Optimizer& optimizer() { return parts_.optimizer; }
  const losses::Loss& loss() const;

  // Keras' compute_loss: the compiled loss of (y(), y_pred) plus the model's regularisation
  // penalties, a float32 scalar on the device (recorded by an active tape).
  absl::StatusOr<Tensor> ComputeLoss(const Tensor& y_pred);
  // Keras' optimizer.apply_gradients; data-parallel, the gradients are first averaged over the
  // ranks (every rank must call it, with the same variables).
  absl::Status ApplyGradients(const std::vector<std::optional<Tensor>>& grads,
                              const std::vector<autodiff::Variable*>& vars);
  // Keras' compiled metrics and loss tracker: what Fit logs as "loss" and the metrics.
  absl::Status UpdateMetrics(const Tensor& loss, const Tensor& y_pred);

 private:
  friend class CustomTrainStep;
  TrainStepContext(StepParts& parts, const Tensor& x, const Tensor& y, const std::string& where)
      : parts_(parts), x_(x), y_(y), where_(where) {}

  StepParts& parts_;
  const Tensor& x_;
  const Tensor& y_;
  const std::string& where_;
};

using TrainStepFn = std::function<absl::Status(TrainStepContext&)>;

// A TrainStepFn as Fit's step.
class CustomTrainStep : public TrainStep {
 public:
  CustomTrainStep(TrainStepFn fn, StepParts parts) : fn_(std::move(fn)), parts_(parts) {}
  absl::Status Run(const Tensor& x, const Tensor& y, const std::string& where) override;

 private:
  TrainStepFn fn_;
  StepParts parts_;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_TRAIN_STEP_H_
