#ifndef SLUICE_TRAIN_OPS_TRANSPOSE_H_
#define SLUICE_TRAIN_OPS_TRANSPOSE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// Output dim i is input dim perm[i] (tf.transpose). An empty perm reverses
// the dims.
absl::StatusOr<Tensor> Transpose(const Tensor& x, std::vector<int> perm = {});

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_TRANSPOSE_H_
