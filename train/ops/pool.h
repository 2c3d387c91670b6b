#ifndef SLUICE_TRAIN_OPS_POOL_H_
#define SLUICE_TRAIN_OPS_POOL_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "train/ops/padding.h"

namespace sluice::train::ops {

struct Pool2DOptions {
  int64_t window_h = 2;
  int64_t window_w = 2;
  int64_t stride_h = 2;
  int64_t stride_w = 2;
  Padding padding = Padding::kValid;
  Pads pads = {};  // with Padding::kExplicit
};

// 2-D pooling over NHWC input (see Conv2D for why channels-last), with oneDNN's
// pooling forward and backward primitives on the CPU. Padded positions never count: max
// pooling ignores them and average pooling divides by the number of real
// inputs in the window, as TF does.
absl::StatusOr<Tensor> MaxPool2D(const Tensor& input, Pool2DOptions options = {});
absl::StatusOr<Tensor> AvgPool2D(const Tensor& input, Pool2DOptions options = {});

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_POOL_H_
