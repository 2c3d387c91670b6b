#ifndef SLUICE_TRAIN_OPTIMIZERS_GRADIENT_ACCUMULATOR_H_
#define SLUICE_TRAIN_OPTIMIZERS_GRADIENT_ACCUMULATOR_H_

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::optimizers {

// Sums gradients over `steps` micro-batches; Average() gives their mean and resets.
// Applying the average of N micro-batches of size B is one step on a batch of
// N * B when the loss is a mean over the batch. A gradient missing (nullopt)
// in some micro-batches counts as zero there; one missing in all stays nullopt.
class GradientAccumulator {
 public:
  explicit GradientAccumulator(int steps);  // steps < 1 counts as 1
  // Every call must pass as many gradients, each with the shape it had before.
  absl::Status Add(const std::vector<std::optional<Tensor>>& grads);
  bool ready() const {
    return added_ >= steps_;
  }  // `steps` gradients added since the last Average()
  // The sum divided by the number of micro-batches added (`steps` once ready).
  absl::StatusOr<std::vector<std::optional<Tensor>>> Average();
  int steps() const { return steps_; }
  // Micro-batches added since the last Average(), and their sums (a checkpoint keeps both).
  int added() const { return added_; }
  const std::vector<std::optional<Tensor>>& sums() const { return sums_; }
  // Continues from saved sums: `added` in [1, steps), one entry per gradient Add will be given
  // (nullopt where none came yet). InvalidArgument otherwise, changing nothing.
  absl::Status Restore(int added, std::vector<std::optional<Tensor>> sums);

 private:
  int steps_;
  int added_ = 0;
  std::vector<std::optional<Tensor>> sums_;
};

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_GRADIENT_ACCUMULATOR_H_
