#ifndef SLUICE_TRAIN_FIT_DATA_PARALLEL_STRATEGY_H_
#define SLUICE_TRAIN_FIT_DATA_PARALLEL_STRATEGY_H_

#include <memory>
#include <optional>
#include <vector>

#include "train/fit/data_parallel.h"
#include "train/fit/step_strategy.h"

namespace sluice::train::fit {

// Synchronous data parallelism (Keras' MultiWorkerMirroredStrategy, PyTorch's DDP): every rank
// applies the mean of the ranks' gradients.
//
// During the backward pass (the built-in step): the loss is divided by the ranks, so that the
// all-reduce only sums, and each bucket of gradients is all-reduced from the tape's hook while
// the backward pass goes on with earlier layers. Otherwise (a custom step, or the mean of an
// accumulation) the gradients are averaged when they are applied.
class DataParallelStrategy : public WrappingStrategy {
 public:
  // `dp` is not owned.
  DataParallelStrategy(DataParallel& dp, bool during_backward, std::unique_ptr<StepStrategy> inner)
      : WrappingStrategy(std::move(inner)), dp_(dp), during_backward_(during_backward) {}

  float LossFactor() const override;
  autodiff::Tape::GradientReadyFn BeginBackward(
      const std::vector<autodiff::Variable*>& vars) override;
  absl::Status ApplyGradients(std::vector<std::optional<Tensor>> grads,
                              const std::vector<autodiff::Variable*>& vars) override;

 private:
  DataParallel& dp_;
  const bool during_backward_;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_DATA_PARALLEL_STRATEGY_H_
