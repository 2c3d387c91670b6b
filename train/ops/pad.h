#ifndef SLUICE_TRAIN_OPS_PAD_H_
#define SLUICE_TRAIN_OPS_PAD_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// `x` with zeros added before and after each dim: paddings[d] = {before, after}, one pair per
// dim of `x`, each >= 0 (tf.pad with mode "CONSTANT" and 0; ONNX Pad's constant mode without
// cropping). Keras' ZeroPadding2D pads dims 1 and 2 of NHWC. The gradient is the output's
// gradient cropped back to `x` (the backend's Concat and Split, one pair per padded dim).
absl::StatusOr<Tensor> ZeroPad(const Tensor& x,
                               const std::vector<std::pair<int64_t, int64_t>>& paddings);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_PAD_H_
