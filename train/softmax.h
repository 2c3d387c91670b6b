#ifndef SLUICE_TRAIN_SOFTMAX_H_
#define SLUICE_TRAIN_SOFTMAX_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train {

// Softmax over the last axis (rank >= 1), max-subtracted for stability.
absl::StatusOr<Tensor> Softmax(const Tensor& logits);

}  // namespace sluice::train

#endif  // SLUICE_TRAIN_SOFTMAX_H_
