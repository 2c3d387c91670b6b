#ifndef SLUICE_TRAIN_OPS_CONCAT_H_
#define SLUICE_TRAIN_OPS_CONCAT_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// Joins float32 tensors along `axis` (negative counts from the end); all
// other dims must match.
absl::StatusOr<Tensor> Concat(const std::vector<Tensor>& xs, int axis);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_CONCAT_H_
