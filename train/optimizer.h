#ifndef SLUICE_TRAIN_OPTIMIZER_H_
#define SLUICE_TRAIN_OPTIMIZER_H_

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "train/variable.h"

namespace sluice::train {

// Updates variables in place from their gradients, as Keras'
// optimizer.apply_gradients. A variable whose gradient is nullopt is left
// alone (it did not contribute to the loss).
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // grads[i] is the gradient of vars[i].
  absl::Status Apply(const std::vector<std::optional<Tensor>>& grads,
                     const std::vector<Variable*>& vars);
  int64_t iterations() const { return iterations_; }

 protected:
  // One variable's update; `step` counts from 1.
  virtual void Update(Variable& var, const Tensor& grad, int64_t step) = 0;

 private:
  int64_t iterations_ = 0;
};

}  // namespace sluice::train

#endif  // SLUICE_TRAIN_OPTIMIZER_H_
