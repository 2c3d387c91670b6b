#ifndef SLUICE_TRAIN_LAYERS_CONV2D_H_
#define SLUICE_TRAIN_LAYERS_CONV2D_H_

#include <cstdint>
#include <optional>

#include "train/layers/kernel_layer.h"
#include "train/layers/window_size.h"
#include "train/ops/conv2d.h"

namespace sluice::train::layers {

struct Conv2DLayerOptions {
  // Strides, dilation, padding and groups (Keras' groups: the kernel is then
  // [kh, kw, in_channels / groups, filters], groups dividing both channel counts).
  ops::Conv2DOptions conv = {};
  bool use_bias = true;
  Initializer kernel_initializer = Initializer::kGlorotUniform;
  Initializer bias_initializer = Initializer::kZeros;
  std::optional<uint64_t> seed;  // unset: the next of layer_seed.h's sequence
  Activation activation = Activation::kLinear;
  std::optional<Regularizer> kernel_regularizer;  // Keras' kernel_regularizer
};

// Keras Conv2D: NHWC input, kernel HWIO [kh, kw, in_channels / groups, filters], bias
// [filters], then the activation. Conv2D(filters, kernel_size) learns in_channels from its first
// input (or Build); Conv2D(in_channels, filters, kh, kw) builds at once. Both give the same values
// for the same seed.
class Conv2D : public KernelLayer {
 public:
  Conv2D(int64_t filters, KernelSize kernel_size, Conv2DLayerOptions options = {});
  // Conv2D(32, 3, Activation::kRelu), as Dense(units, activation): `activation` replaces
  // options.activation.
  Conv2D(int64_t filters, KernelSize kernel_size, Activation activation,
         Conv2DLayerOptions options = {});
  Conv2D(int64_t in_channels, int64_t filters, int64_t kernel_h, int64_t kernel_w,
         Conv2DLayerOptions options = {});
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  // With a bias, a linear activation and a float32 output, in one kernel (ops::Conv2DBiasRelu).
  bool FusesRelu() const override;
  absl::StatusOr<Tensor> ForwardRelu(const Tensor& input, bool training) override;
  absl::Status Build(const Shape& input_shape) override;
  absl::StatusOr<LayerConfig> GetConfig() override;

 private:
  absl::StatusOr<Tensor> Run(const Tensor& input, bool relu);

  ops::Conv2DOptions conv_;
  int64_t filters_;
  KernelSize kernel_size_;
  std::optional<int64_t> in_channels_;  // set once built
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_CONV2D_H_
