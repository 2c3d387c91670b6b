#include "train/layers/zero_padding2d.h"

#include "absl/strings/str_cat.h"
#include "train/ops/pad.h"

namespace sluice::train::layers {

absl::StatusOr<Tensor> ZeroPadding2D::Forward(const Tensor& input, bool) {
  if (input.rank() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("ZeroPadding2D: expects NHWC inputs [batch, height, width, channels], got ",
                     input.shape().DebugString()));
  }
  const Padding2D& p = padding_;
  if (p.top < 0 || p.bottom < 0 || p.left < 0 || p.right < 0) {
    return absl::InvalidArgumentError(absl::StrCat("ZeroPadding2D: padding ((", p.top, ", ",
                                                   p.bottom, "), (", p.left, ", ", p.right,
                                                   ")) has a negative side"));
  }
  return ops::ZeroPad(input, {{0, 0}, {p.top, p.bottom}, {p.left, p.right}, {0, 0}});
}

absl::StatusOr<LayerConfig> ZeroPadding2D::GetConfig() {
  return LayerConfig{.class_name = "ZeroPadding2D",
                     .ints = {{"top", padding_.top},
                              {"bottom", padding_.bottom},
                              {"left", padding_.left},
                              {"right", padding_.right}}};
}

}  // namespace sluice::train::layers
