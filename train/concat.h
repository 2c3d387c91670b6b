#ifndef SLUICE_TRAIN_CONCAT_H_
#define SLUICE_TRAIN_CONCAT_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train {

// Joins float32 tensors along `axis` (negative counts from the end); all
// other dims must match.
absl::StatusOr<Tensor> Concat(const std::vector<Tensor>& xs, int axis);

}  // namespace sluice::train

#endif  // SLUICE_TRAIN_CONCAT_H_
