#include "train/layers/conv2d.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/ops/activations.h"

namespace sluice::train::layers {
Conv2D::Conv2D(int64_t filters, KernelSize kernel_size, Conv2DLayerOptions options)
    : KernelLayer(ConfigOf("conv2d", options)),
      conv_(options.conv),
      filters_(filters),
      kernel_size_(kernel_size) {}

Conv2D::Conv2D(int64_t filters, KernelSize kernel_size, Activation activation,
               Conv2DLayerOptions options)
    : Conv2D(filters, kernel_size, [&] {
        options.activation = activation;
        return options;
      }()) {}

Conv2D::Conv2D(int64_t in_channels, int64_t filters, int64_t kernel_h, int64_t kernel_w,
               Conv2DLayerOptions options)
    : Conv2D(filters, KernelSize(kernel_h, kernel_w), options) {
  BuildOrDie(*this, Shape{1, 1, 1, in_channels});
}

absl::Status Conv2D::Build(const Shape& input_shape) {
  if (filters_ < 1 || kernel_size_.h < 1 || kernel_size_.w < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": filters and the kernel size must be >= 1, got ", filters_,
                     " filters of ", kernel_size_.h, "x", kernel_size_.w));
  }
  if (input_shape.rank() != 4 || input_shape.dim(3) < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        name(), ": expects NHWC inputs [batch, height, width, channels], got ",
        input_shape.DebugString(),
        input_shape.rank() == 3 ? "; one-channel images need their channel axis: reshape them to "
                                  "[batch, height, width, 1] in the pipeline"
                                : ""));
  }
  const int64_t in = input_shape.dim(3);
  const int64_t groups = conv_.groups;
  if (groups < 1 || in % groups != 0 || filters_ % groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": groups ", groups,
                                                   " must divide the input channels (", in,
                                                   ") and the filters (", filters_, ")"));
  }
  if (in_channels_) {
    if (in != *in_channels_) {
      return absl::InvalidArgumentError(absl::StrCat(name(), ": built for ", *in_channels_,
                                                     " input channels, got input ",
                                                     input_shape.DebugString()));
    }
    return absl::OkStatus();
  }
  SLUICE_RETURN_IF_ERROR(
      CreateVariables(Shape{kernel_size_.h, kernel_size_.w, in / groups, filters_}));
  in_channels_ = in;
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Conv2D::Forward(const Tensor& input, bool) { return Run(input, false); }

bool Conv2D::FusesRelu() const {
  return activation() == Activation::kLinear && use_bias() && !conv_.keep_compute_dtype;
}

absl::StatusOr<Tensor> Conv2D::ForwardRelu(const Tensor& input, bool) { return Run(input, true); }

absl::StatusOr<Tensor> Conv2D::Run(const Tensor& input, bool relu) {
  if (!built()) {
    SLUICE_RETURN_IF_ERROR(BuildFor(input));
  } else if (input.rank() != 4 || input.dim(3) != *in_channels_) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": built for ", *in_channels_,
                                                   " input channels, got input ",
                                                   input.shape().DebugString()));
  }
  // The bias, and a ReLU (relu twice is relu once), in the convolution's own kernels.
  if (bias() != nullptr && !conv_.keep_compute_dtype &&
      (activation() == Activation::kRelu || (relu && activation() == Activation::kLinear))) {
    return ops::Conv2DBiasRelu(input, kernel().value(), bias()->value(), conv_);
  }
  SLUICE_ASSIGN_OR_RETURN(
      Tensor y, bias() != nullptr ? ops::Conv2D(input, kernel().value(), bias()->value(), conv_)
                                  : ops::Conv2D(input, kernel().value(), conv_));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Activate(activation(), y));
  return relu ? ops::Relu(out) : out;
}

absl::StatusOr<LayerConfig> Conv2D::GetConfig() {
  LayerConfig config{.class_name = "Conv2D",
                     .ints = {{"filters", filters_},
                              {"kernel_h", kernel_size_.h},
                              {"kernel_w", kernel_size_.w},
                              {"stride_h", conv_.stride_h},
                              {"stride_w", conv_.stride_w},
                              {"dilation_h", conv_.dilation_h},
                              {"dilation_w", conv_.dilation_w},
                              {"groups", conv_.groups}}};
  AddPaddingConfig(conv_.padding, conv_.pads, config);
  // Only when set, so that the configs of every other convolution stay as they were.
  if (conv_.keep_compute_dtype) config.ints["keep_compute_dtype"] = 1;
  if (in_channels_) config.ints["in_channels"] = *in_channels_;
  AddKernelConfig(config);
  return config;
}

}  // namespace sluice::train::layers
