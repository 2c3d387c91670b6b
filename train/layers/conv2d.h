#ifndef SLUICE_TRAIN_LAYERS_CONV2D_H_
#define SLUICE_TRAIN_LAYERS_CONV2D_H_

#include <cstdint>
#include <optional>

#include "train/layers/initializers.h"
#include "train/layers/module.h"
#include "train/ops/conv2d.h"

namespace sluice::train::layers {

struct Conv2DLayerOptions {
  ops::Conv2DOptions conv = {};
  bool use_bias = true;
  Initializer kernel_initializer = Initializer::kGlorotUniform;
  Initializer bias_initializer = Initializer::kZeros;
  uint64_t seed = 0;
};

// Keras Conv2D: NHWC input, kernel HWIO [kh, kw, in_channels, filters], bias
// [filters].
class Conv2D : public Module {
 public:
  Conv2D(int64_t in_channels, int64_t filters, int64_t kernel_h, int64_t kernel_w,
         Conv2DLayerOptions options = {});
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::vector<autodiff::Variable*> TrainableVariables() override;
  autodiff::Variable& kernel() { return kernel_; }
  autodiff::Variable* bias() { return bias_ ? &*bias_ : nullptr; }

 private:
  ops::Conv2DOptions conv_;
  autodiff::Variable kernel_;
  std::optional<autodiff::Variable> bias_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_CONV2D_H_
