#ifndef SLUICE_TRAIN_OPS_REDUCE_H_
#define SLUICE_TRAIN_OPS_REDUCE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// Reductions over `axes` (negative counts from the end; empty means all
// axes), keeping reduced dims as 1 when `keepdims`. A mean over an empty axis is NaN (0 / 0, as
// tf.reduce_mean); a sum over one is 0.
absl::StatusOr<Tensor> Sum(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
absl::StatusOr<Tensor> Mean(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
// The gradient is split evenly between tied maxima, as in TF's reduce_max.
absl::StatusOr<Tensor> Max(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
// tf.argmax: the int64 index of the first maximum along `axis` (negative counts from the end),
// which is removed from the shape; a NaN counts as a maximum. No gradient. The axis must not be
// empty.
absl::StatusOr<Tensor> ArgMax(const Tensor& x, int axis = -1);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_REDUCE_H_
