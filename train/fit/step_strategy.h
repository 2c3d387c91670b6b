#ifndef SLUICE_TRAIN_FIT_STEP_STRATEGY_H_
#define SLUICE_TRAIN_FIT_STEP_STRATEGY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "train/autodiff/tape.h"
#include "train/autodiff/variable.h"
#include "train/callbacks/callback.h"
#include "train/fit/data_parallel.h"
#include "train/fit/training_checkpoint.h"
#include "train/optimizers/dynamic_loss_scale.h"
#include "train/optimizers/optimizer.h"

namespace sluice::train::fit {

// How a training step turns the gradients of its loss into an update of the variables: the
// pieces of Keras' distribution strategy and LossScaleOptimizer, or of PyTorch's DDP, GradScaler
// and gradient accumulation, each holding its own state. Strategies compose: each one but
// LocalStrategy wraps the next (MakeStepStrategy builds the chain), so that a step, eager,
// custom or traced, calls the same three methods whatever the configuration.
class StepStrategy {
 public:
  virtual ~StepStrategy() = default;

  // What the step multiplies its loss by before the backward pass (1: nothing to do).
  virtual float LossFactor() const = 0;
  // Whether the forward and backward passes may be traced and replayed (CompiledTrainStep): no
  // loss factor and no hook in the backward pass, whose host work a replay would skip.
  virtual bool Traceable() const { return false; }
  // The optimizer whose update a traced step may record too (Optimizer::PrepareStep before the
  // step, UpdateVariables inside it), or null when the gradients must come out of the step to
  // ApplyGradients: a strategy that does host work between the backward pass and the update,
  // or an optimizer that is not Traceable() (clipping by global norm).
  virtual optimizers::Optimizer* TracedOptimizer() { return nullptr; }
  // Called before the backward pass over `vars`: a hook for Tape::Gradient that sees each
  // gradient as soon as it is final, or nullptr.
  virtual autodiff::Tape::GradientReadyFn BeginBackward(
      const std::vector<autodiff::Variable*>& vars) = 0;
  // Takes the gradients of (loss x LossFactor()) with respect to `vars` and updates the
  // variables, or decides not to yet (an accumulation in progress, a loss-scale overflow).
  virtual absl::Status ApplyGradients(std::vector<std::optional<Tensor>> grads,
                                      const std::vector<autodiff::Variable*>& vars) = 0;
  // Adds what it reports per step and per epoch to `logs` ("loss_scale").
  virtual void AddLogs(callbacks::Logs& logs) const = 0;
  // Adds the state a checkpoint must keep to this rank's `position`: the partial sums of an
  // accumulation under way.
  virtual absl::Status SaveState(RankPosition& position) const = 0;
  // Takes back what SaveState kept (`where` names the checkpoint in errors). FailedPrecondition
  // when this chain cannot continue it: accumulated gradients without accumulation over as many
  // micro-batches.
  virtual absl::Status RestoreState(const RankPosition& position, absl::string_view where) = 0;
};

// The innermost strategy: the optimizer applies the gradients as they come.
class LocalStrategy : public StepStrategy {
 public:
  explicit LocalStrategy(optimizers::Optimizer& optimizer) : optimizer_(optimizer) {}
  float LossFactor() const override { return 1.0f; }
  bool Traceable() const override { return true; }
  optimizers::Optimizer* TracedOptimizer() override {
    return optimizer_.Traceable() ? &optimizer_ : nullptr;
  }
  autodiff::Tape::GradientReadyFn BeginBackward(
      const std::vector<autodiff::Variable*>& /*vars*/) override {
    return nullptr;
  }
  absl::Status ApplyGradients(std::vector<std::optional<Tensor>> grads,
                              const std::vector<autodiff::Variable*>& vars) override {
    return optimizer_.Apply(grads, vars);
  }
  void AddLogs(callbacks::Logs& /*logs*/) const override {}
  absl::Status SaveState(RankPosition& /*position*/) const override { return absl::OkStatus(); }
  // Accumulated gradients reach here only where no GradientAccumulationStrategy took them.
  absl::Status RestoreState(const RankPosition& position, absl::string_view where) override;

 private:
  optimizers::Optimizer& optimizer_;
};

// A strategy that wraps `inner` and passes to it whatever it does not change.
class WrappingStrategy : public StepStrategy {
 public:
  explicit WrappingStrategy(std::unique_ptr<StepStrategy> inner) : inner_(std::move(inner)) {}
  float LossFactor() const override { return inner_->LossFactor(); }
  autodiff::Tape::GradientReadyFn BeginBackward(
      const std::vector<autodiff::Variable*>& vars) override {
    return inner_->BeginBackward(vars);
  }
  void AddLogs(callbacks::Logs& logs) const override { inner_->AddLogs(logs); }
  absl::Status SaveState(RankPosition& position) const override {
    return inner_->SaveState(position);
  }
  absl::Status RestoreState(const RankPosition& position, absl::string_view where) override {
    return inner_->RestoreState(position, where);
  }

 protected:
  StepStrategy& inner() { return *inner_; }

 private:
  std::unique_ptr<StepStrategy> inner_;
};

// What MakeStepStrategy composes.
struct StepStrategyOptions {
  // Dynamic loss scaling; not owned, kept by the trainer across Fits. nullptr: none.
  optimizers::DynamicLossScale* loss_scale = nullptr;
  // Data-parallel training; not owned. nullptr: one process.
  DataParallel* data_parallel = nullptr;
  // Sum this many steps' gradients and apply their mean once.
  int accumulation_steps = 1;
  // The step's backward pass may all-reduce gradients as they come (the built-in step; a custom
  // step's gradients are averaged when it applies them).
  bool reduce_during_backward = true;
};

// The chain for `options`, outermost first: gradient accumulation (only the accumulated mean
// goes on), data parallelism (during the backward pass, or of the mean once accumulated), loss
// scaling (unscales, skips an overflowing step), then the optimizer.
std::unique_ptr<StepStrategy> MakeStepStrategy(optimizers::Optimizer& optimizer,
                                               const StepStrategyOptions& options);

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_STEP_STRATEGY_H_
