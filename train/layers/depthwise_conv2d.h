#ifndef SLUICE_TRAIN_LAYERS_DEPTHWISE_CONV2D_H_
#define SLUICE_TRAIN_LAYERS_DEPTHWISE_CONV2D_H_

#include <cstdint>
#include <optional>

#include "train/layers/kernel_layer.h"
#include "train/layers/window_size.h"
#include "train/ops/padding.h"

namespace sluice::train::layers {

// Keras' defaults. kernel_initializer and kernel_regularizer are Keras' depthwise_initializer
// and depthwise_regularizer.
struct DepthwiseConv2DOptions {
  KernelSize strides = 1;
  ops::Padding padding = ops::Padding::kValid;
  // Output channels per input channel.
  int64_t depth_multiplier = 1;
  KernelSize dilation_rate = 1;
  bool use_bias = true;
  Initializer kernel_initializer = Initializer::kGlorotUniform;
  Initializer bias_initializer = Initializer::kZeros;
  std::optional<uint64_t> seed;  // unset: the next of layer_seed.h's sequence
  Activation activation = Activation::kLinear;
  std::optional<Regularizer> kernel_regularizer;
};

// Keras DepthwiseConv2D: each input channel convolved with its own depth_multiplier filters,
// output channel c * depth_multiplier + m from input channel c. Kernel
// [kh, kw, in_channels, depth_multiplier] (Keras' shape and initialisation), bias
// [in_channels * depth_multiplier], then the activation. It runs as one grouped convolution
// (groups = in_channels) on the backend: oneDNN's on the CPU, cuDNN's on CUDA. It learns
// in_channels from its first input (or Build).
class DepthwiseConv2D : public KernelLayer {
 public:
  explicit DepthwiseConv2D(KernelSize kernel_size, DepthwiseConv2DOptions options = {});
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  absl::Status Build(const Shape& input_shape) override;
  absl::StatusOr<LayerConfig> GetConfig() override;

  const DepthwiseConv2DOptions& options() const { return options_; }
  KernelSize kernel_size() const { return kernel_size_; }

 private:
  KernelSize kernel_size_;
  DepthwiseConv2DOptions options_;
  std::optional<int64_t> in_channels_;  // set once built
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_DEPTHWISE_CONV2D_H_
