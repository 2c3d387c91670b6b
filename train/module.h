#ifndef SLUICE_TRAIN_MODULE_H_
#define SLUICE_TRAIN_MODULE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "train/variable.h"

namespace sluice::train {

// A layer: owns its variables and knows whether it is training (Dropout and
// BatchNorm behave differently). Forward ops are recorded by any active Tape.
class Module {
 public:
  virtual ~Module() = default;
  virtual absl::StatusOr<Tensor> Forward(const Tensor& input) = 0;
  // The variables an optimizer updates, in a stable order.
  virtual std::vector<Variable*> TrainableVariables() { return {}; }
  virtual void SetTraining(bool training) { training_ = training; }
  bool training() const { return training_; }

 private:
  bool training_ = true;
};

}  // namespace sluice::train

#endif  // SLUICE_TRAIN_MODULE_H_
