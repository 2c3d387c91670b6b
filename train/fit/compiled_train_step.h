#ifndef SLUICE_TRAIN_FIT_COMPILED_TRAIN_STEP_H_
#define SLUICE_TRAIN_FIT_COMPILED_TRAIN_STEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "train/autodiff/variable.h"
#include "train/fit/train_step.h"
#include "train/function/function.h"
#include "train/optimizers/optimizer.h"

namespace sluice::train::fit {

// Fit's built-in step traced once per batch signature and then replayed (tf.function around
// Keras' train_step): the forward pass (in the precision policy), the compiled loss, the backward
// pass and the optimizer's update are one function::Function. The optimizer's host work (its
// iterations, schedule and bias corrections) runs before each call (Optimizer::PrepareStep) and
// leaves the step's scalars on the device, where the recorded update kernels read them. Where
// the strategy has no TracedOptimizer() (clipping by global norm), the function returns the
// gradients and the strategy applies them eagerly after each replay. The metric updates are in
// the function too, before the update (their running totals prepared on the device before each
// call: CompiledMetrics::PrepareOn), so that a refused trace stops before any variable changed
// and the optimizer's step is taken back (Optimizer::CancelStep). Only a strategy that is
// Traceable() (the local one) may use it; Fit runs the others eagerly.
//
// The results equal EagerTrainStep's bit for bit: a replay runs the same kernels on the same
// values in the same order. A change of the trainable variables (a layer frozen or unfrozen), of
// the optimizer's generation() (its slots restored, its weight decay exclusions changed) or of
// whether the update is traced drops the traces.
class CompiledTrainStep : public TrainStep {
 public:
  CompiledTrainStep(StepParts parts, function::FunctionOptions options);
  absl::Status Run(const Tensor& x, const Tensor& y, const std::string& where) override;

  const function::Function& function() const { return function_; }

 private:
  // The traced part: outputs the label check's count (or an empty tensor), then, unless it
  // updates the variables itself (optimizer_), one gradient per variable of vars_ (an empty
  // tensor for none).
  absl::StatusOr<std::vector<Tensor>> ForwardBackward(const std::vector<Tensor>& inputs);

  StepParts parts_;
  std::vector<autodiff::Variable*> vars_;
  int64_t label_classes_ = 0;  // of the label check, set while tracing
  // The optimizer the traces update with (null: they return the gradients), and its generation()
  // when they were made.
  optimizers::Optimizer* optimizer_ = nullptr;
  int64_t optimizer_generation_ = -1;
  function::Function function_;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_COMPILED_TRAIN_STEP_H_
