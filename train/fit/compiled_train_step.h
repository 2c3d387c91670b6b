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

namespace sluice::train::fit {

// Fit's built-in step traced once per batch signature and then replayed (tf.function around
// Keras' train_step): the forward pass (in the precision policy), the compiled loss and the
// backward pass are one function::Function. The gradients it returns are applied by the
// strategy, and the metrics updated, eagerly after each replay: the optimizers' learning rates
// and bias corrections are host values of each step. Only a strategy that is Traceable() (the
// local one) may use it; Fit runs the others eagerly.
//
// The results equal EagerTrainStep's bit for bit: a replay runs the same kernels on the same
// values in the same order. A change of the trainable variables (a layer frozen or unfrozen)
// drops the traces.
class CompiledTrainStep : public TrainStep {
 public:
  CompiledTrainStep(StepParts parts, function::FunctionOptions options);
  absl::Status Run(const Tensor& x, const Tensor& y, const std::string& where) override;

  const function::Function& function() const { return function_; }

 private:
  // The traced part: outputs loss, y_pred, the label check's count (or an empty tensor), then one
  // gradient per variable of vars_ (an empty tensor for none).
  absl::StatusOr<std::vector<Tensor>> ForwardBackward(const std::vector<Tensor>& inputs);

  StepParts parts_;
  std::vector<autodiff::Variable*> vars_;
  int64_t label_classes_ = 0;  // of the label check, set while tracing
  function::Function function_;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_COMPILED_TRAIN_STEP_H_
