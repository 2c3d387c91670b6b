#ifndef SLUICE_TRAIN_OPS_RESHAPE_H_
#define SLUICE_TRAIN_OPS_RESHAPE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// The values of `x` in a new shape of the same element count; one dim may be
// -1 (inferred). The result is a copy so that the tape can tell it from `x`.
absl::StatusOr<Tensor> Reshape(const Tensor& x, std::vector<int64_t> shape);
// [N, ...] -> [N, prod(...)], as Keras' Flatten.
absl::StatusOr<Tensor> Flatten(const Tensor& x);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_RESHAPE_H_
