#ifndef SLUICE_TRAIN_OPS_SOFTMAX_H_
#define SLUICE_TRAIN_OPS_SOFTMAX_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// Softmax over the last axis (rank >= 1), max-subtracted for stability.
absl::StatusOr<Tensor> Softmax(const Tensor& logits);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_SOFTMAX_H_
