#ifndef SLUICE_TRAIN_OPTIMIZERS_SUM_OF_SQUARES_H_
#define SLUICE_TRAIN_OPTIMIZERS_SUM_OF_SQUARES_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::optimizers {

// The sum of every present gradient's squared elements, float32 [1] on their device (they must
// share one), or nullopt when none is present. Clipping takes its square root (the global
// norm); loss scaling reads it to see whether every gradient is finite (an overflow makes it
// inf or NaN). The caller copies that one number back when it needs it.
absl::StatusOr<std::optional<Tensor>> SumOfSquares(const std::vector<std::optional<Tensor>>& grads,
                                                   const char* caller);

}  // namespace sluice::train::optimizers

#endif  // SLUICE_TRAIN_OPTIMIZERS_SUM_OF_SQUARES_H_
