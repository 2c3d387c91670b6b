#include "train/layers/conv2d.h"

#include "core/status_macros.h"
#include "train/ops/arithmetic.h"

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
  SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::Conv2D(input, kernel_.value(), conv_));
  if (!bias_) return y;
  return ops::Add(y, bias_->value());  // [filters] broadcasts over NHW
}

std::vector<autodiff::Variable*> Conv2D::TrainableVariables() {
  std::vector<autodiff::Variable*> vars = {&kernel_};
  if (bias_) vars.push_back(&*bias_);
  return vars;
}

}  // namespace sluice::train::layers
