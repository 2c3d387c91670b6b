#ifndef SLUICE_TRAIN_FIT_EAGER_TRAIN_STEP_H_
#define SLUICE_TRAIN_FIT_EAGER_TRAIN_STEP_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "train/fit/train_step.h"

namespace sluice::train::fit {

// Fit's built-in step, run op by op: the forward pass under a tape (in the precision policy),
// the compiled loss, the loss times the strategy's factor, the backward pass (with the
// strategy's hook), the strategy's update, the metrics. Each part is a profiler phase.
class EagerTrainStep : public TrainStep {
 public:
  explicit EagerTrainStep(StepParts parts) : parts_(parts) {}
  absl::Status Run(const Tensor& x, const Tensor& y, const std::string& where) override;

 private:
  // `loss` times `factor`, with the factor copied to the loss's device only when it changes.
  absl::StatusOr<Tensor> Scale(const Tensor& loss, float factor);

  StepParts parts_;
  std::optional<Tensor> factor_;
  float factor_value_ = 0;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_EAGER_TRAIN_STEP_H_
