#ifndef SLUICE_TRAIN_OPS_CONV2D_H_
#define SLUICE_TRAIN_OPS_CONV2D_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "train/ops/padding.h"

namespace sluice::train::ops {

struct Conv2DOptions {
  int64_t stride_h = 1;
  int64_t stride_w = 1;
  int64_t dilation_h = 1;
  int64_t dilation_w = 1;
  Padding padding = Padding::kValid;
  Pads pads = {};  // with Padding::kExplicit
  // Grouped convolution (Keras' Conv2D(groups=), ONNX Conv's group): the filter is
  // [KH, KW, C / groups, O], groups dividing C and O, and output channel j sees only the input
  // channels of group j / (O / groups). groups = C is a depthwise convolution.
  int64_t groups = 1;
  // Under a policy whose convolutions read bfloat16 operands (Backend::ReadsBFloat16Operands:
  // the CPU's mixed_bfloat16), write the output in bfloat16 too, for a consumer that reads it so
  // (a batch norm): Keras' mixed policy, where a layer's output is in its compute dtype. Float32
  // otherwise. Whatever this says, a bfloat16 input gets a bfloat16 gradient.
  bool keep_compute_dtype = false;
};

// 2-D convolution (cross-correlation, as tf.nn.conv2d) in Keras' layouts:
// input NHWC [N, H, W, C], filter HWIO [KH, KW, C / groups, O], output NHWC
// [N, OH, OW, O]. Channels-last because that is what our decoders produce and
// what Keras models expect; oneDNN reads these layouts directly. Forward,
// backward-data and backward-weights run on the inputs' backend (oneDNN
// convolution primitives on the CPU). The input's gradient is computed only
// when a tape tracks the input (not for the images fed to a first layer).
absl::StatusOr<Tensor> Conv2D(const Tensor& input, const Tensor& filter,
                              Conv2DOptions options = {});
// The same plus `bias` [O] at every output position (tf.nn.conv2d then tf.nn.bias_add), in one
// backend kernel forward and backward (Backend::Conv2DBiasForward): a pass over the output and
// one over its gradient fewer than Conv2D and Add.
absl::StatusOr<Tensor> Conv2D(const Tensor& input, const Tensor& filter, const Tensor& bias,
                              Conv2DOptions options = {});
// The same, then max(., 0): a convolution, its bias and the ReLU after them with the ReLU inside
// the convolution's kernel (Backend::Conv2DBiasReluForward; the CPU's float32 convolution runs it
// as a post-op): the values and gradients of Conv2D then Relu, a pass over the output fewer. The
// output is float32 (options.keep_compute_dtype is refused under mixed_bfloat16).
absl::StatusOr<Tensor> Conv2DBiasRelu(const Tensor& input, const Tensor& filter, const Tensor& bias,
                                      Conv2DOptions options = {});

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_CONV2D_H_
