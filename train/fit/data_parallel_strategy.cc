#include "train/fit/data_parallel_strategy.h"

#include <utility>

#include "core/status_macros.h"

namespace sluice::train::fit {

float DataParallelStrategy::LossFactor() const {
  const float inner = WrappingStrategy::LossFactor();
  // Dividing the loss spares the all-reduce a pass over every gradient.
  return during_backward_ ? inner / static_cast<float>(dp_.size()) : inner;
}

autodiff::Tape::GradientReadyFn DataParallelStrategy::BeginBackward(
    const std::vector<autodiff::Variable*>& vars) {
  if (!during_backward_) return WrappingStrategy::BeginBackward(vars);
  // Each bucket's all-reduce starts while the backward pass goes on.
  dp_.BeginStep(vars, distributed::ReduceOp::kSum);  // the loss is divided by the ranks
  return dp_.OnGradientReady();
}

absl::Status DataParallelStrategy::ApplyGradients(std::vector<std::optional<Tensor>> grads,
                                                  const std::vector<autodiff::Variable*>& vars) {
  if (during_backward_) {
    SLUICE_RETURN_IF_ERROR(dp_.FinishStep(grads));
  } else {
    SLUICE_RETURN_IF_ERROR(dp_.AllReduceMean(vars, grads));
  }
  return inner().ApplyGradients(std::move(grads), vars);
}

}  // namespace sluice::train::fit
