#ifndef SLUICE_TRAIN_LAYERS_ZERO_PADDING2D_H_
#define SLUICE_TRAIN_LAYERS_ZERO_PADDING2D_H_

#include <cstdint>
#include <string>
#include <utility>

#include "train/layers/module.h"

namespace sluice::train::layers {

// Rows and columns of zeros around an image.
struct Padding2D {
  int64_t top = 0, bottom = 0, left = 0, right = 0;
};

// Keras ZeroPadding2D: NHWC [N, H, W, C] to [N, top + H + bottom, left + W + right, C], the new
// rows and columns zero. Keras' three forms of `padding`: ZeroPadding2D(p) pads every side by p
// (Keras' default is 1), ZeroPadding2D(h, w) pads h rows above and below and w columns left and
// right, and ZeroPadding2D({top, bottom}, {left, right}) each side its own. A negative padding is
// an error when the layer runs or is loaded.
class ZeroPadding2D : public Module {
 public:
  explicit ZeroPadding2D(int64_t padding = 1) : ZeroPadding2D(padding, padding) {}
  ZeroPadding2D(int64_t height, int64_t width)
      : padding_{.top = height, .bottom = height, .left = width, .right = width} {}
  ZeroPadding2D(std::pair<int64_t, int64_t> height, std::pair<int64_t, int64_t> width)
      : padding_{.top = height.first,
                 .bottom = height.second,
                 .left = width.first,
                 .right = width.second} {}
  explicit ZeroPadding2D(Padding2D padding) : padding_(padding) {}

  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return "zero_padding2d"; }
  absl::StatusOr<LayerConfig> GetConfig() override;
  const Padding2D& padding() const { return padding_; }

 private:
  Padding2D padding_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_ZERO_PADDING2D_H_
