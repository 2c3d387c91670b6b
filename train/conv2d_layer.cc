#include "train/conv2d_layer.h"

#include "core/status_macros.h"
#include "train/arithmetic.h"

namespace sluice::train::layers {

Conv2D::Conv2D(int64_t in_channels, int64_t filters, int64_t kernel_h, int64_t kernel_w,
               Conv2DLayerOptions options)
    : conv_(options.conv),
      kernel_(Initialize(options.kernel_initializer,
                         Shape{kernel_h, kernel_w, in_channels, filters}, options.seed),
              "conv2d/kernel") {
  if (options.use_bias) {
    bias_.emplace(Initialize(options.bias_initializer, Shape{filters}, options.seed + 1),
                  "conv2d/bias");
  }
}

absl::StatusOr<Tensor> Conv2D::Forward(const Tensor& input, bool) {
  ASSIGN_OR_RETURN(Tensor y, train::Conv2D(input, kernel_.value(), conv_));
  if (!bias_) return y;
  return Add(y, bias_->value());  // [filters] broadcasts over NHW
}

std::vector<Variable*> Conv2D::TrainableVariables() {
  std::vector<Variable*> vars = {&kernel_};
  if (bias_) vars.push_back(&*bias_);
  return vars;
}

}  // namespace sluice::train::layers
