#include "train/layers/depthwise_conv2d.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/layers/parameter_limit.h"
#include "train/ops/conv2d.h"
#include "train/ops/reshape.h"

namespace sluice::train::layers {

DepthwiseConv2D::DepthwiseConv2D(KernelSize kernel_size, DepthwiseConv2DOptions options)
    : KernelLayer(ConfigOf("depthwise_conv2d", options)),
      kernel_size_(kernel_size),
      options_(options) {}

absl::Status DepthwiseConv2D::Build(const Shape& input_shape) {
  if (input_shape.rank() != 4 || input_shape.dim(3) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": expects NHWC inputs [batch, height, width, channels], got ",
                     input_shape.DebugString()));
  }
  const int64_t in = input_shape.dim(3);
  if (in_channels_) {
    if (in != *in_channels_) {
      return absl::InvalidArgumentError(absl::StrCat(name(), ": built for ", *in_channels_,
                                                     " input channels, got input ",
                                                     input_shape.DebugString()));
    }
    return absl::OkStatus();
  }
  const int64_t m = options_.depth_multiplier;
  if (m < 1 || kernel_size_.h < 1 || kernel_size_.w < 1) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": depth_multiplier ", m, ", kernel ",
                                                   kernel_size_.h, "x", kernel_size_.w));
  }
  SLUICE_RETURN_IF_ERROR(
      CreateVariables(Shape{kernel_size_.h, kernel_size_.w, in, m}, SaturatingProduct({in, m})));
  in_channels_ = in;
  return absl::OkStatus();
}

absl::StatusOr<Tensor> DepthwiseConv2D::Forward(const Tensor& input, bool) {
  if (!built()) {
    SLUICE_RETURN_IF_ERROR(BuildFor(input));
  } else if (input.rank() != 4 || input.dim(3) != *in_channels_) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": built for ", *in_channels_,
                                                   " input channels, got input ",
                                                   input.shape().DebugString()));
  }
  const int64_t c = *in_channels_, m = options_.depth_multiplier;
  // [kh, kw, c, m] holds the bytes of the grouped filter [kh, kw, 1, c * m]: output channel
  // c * m + j of group c. The reshape is recorded, so the kernel's gradient flows back through it.
  SLUICE_ASSIGN_OR_RETURN(
      const Tensor filter,
      ops::Reshape(kernel().value(), {kernel_size_.h, kernel_size_.w, 1, c * m}));
  const ops::Conv2DOptions conv{.stride_h = options_.strides.h,
                                .stride_w = options_.strides.w,
                                .dilation_h = options_.dilation_rate.h,
                                .dilation_w = options_.dilation_rate.w,
                                .padding = options_.padding,
                                .groups = c};
  SLUICE_ASSIGN_OR_RETURN(Tensor y, bias() != nullptr
                                        ? ops::Conv2D(input, filter, bias()->value(), conv)
                                        : ops::Conv2D(input, filter, conv));
  return Activate(activation(), y);
}

absl::StatusOr<LayerConfig> DepthwiseConv2D::GetConfig() {
  LayerConfig config{.class_name = "DepthwiseConv2D",
                     .ints = {{"kernel_h", kernel_size_.h},
                              {"kernel_w", kernel_size_.w},
                              {"stride_h", options_.strides.h},
                              {"stride_w", options_.strides.w},
                              {"dilation_h", options_.dilation_rate.h},
                              {"dilation_w", options_.dilation_rate.w},
                              {"depth_multiplier", options_.depth_multiplier}},
                     .strings = {{"padding", std::string(ops::PaddingName(options_.padding))}}};
  if (in_channels_) config.ints["in_channels"] = *in_channels_;
  AddKernelConfig(config);
  return config;
}

}  // namespace sluice::train::layers
