#include "train/layers/layer_config.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "core/mutex.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "train/layers/activation.h"
#include "train/layers/activation_layer.h"
#include "train/layers/add.h"
#include "train/layers/avg_pool.h"
#include "train/layers/batch_norm.h"
#include "train/layers/concatenate.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/depthwise_conv2d.h"
#include "train/layers/dropout.h"
#include "train/layers/flatten.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/global_max_pool.h"
#include "train/layers/initializers.h"
#include "train/layers/max_pool.h"
#include "train/layers/model.h"
#include "train/layers/module.h"
#include "train/layers/multiply.h"
#include "train/layers/parameter_limit.h"
#include "train/layers/recompute.h"
#include "train/layers/relu.h"
#include "train/layers/reshape.h"
#include "train/layers/residual_block.h"
#include "train/layers/sequential.h"
#include "train/layers/zero_padding2d.h"
#include "train/ops/padding.h"
#include "train/ops/pool.h"

namespace sluice::train::layers {
namespace {

using Made = absl::StatusOr<std::unique_ptr<Module>>;

absl::Status Missing(const LayerConfig& config, const std::string& key) {
  return absl::InvalidArgumentError(
      absl::StrCat("the config of ", config.class_name, " has no '", key, "'"));
}

absl::StatusOr<ops::Pool2DOptions> PoolOptions(const LayerConfig& config) {
  ops::Pool2DOptions options;
  SLUICE_ASSIGN_OR_RETURN(options.window_h, config.Int("window_h"));
  SLUICE_ASSIGN_OR_RETURN(options.window_w, config.Int("window_w"));
  SLUICE_ASSIGN_OR_RETURN(options.stride_h, config.Int("stride_h"));
  SLUICE_ASSIGN_OR_RETURN(options.stride_w, config.Int("stride_w"));
  SLUICE_RETURN_IF_ERROR(ReadPadding(config, options.padding, options.pads));
  return options;
}

// The config of a container's layer `i`, checked before it is used.
absl::StatusOr<const LayerConfig*> ChildConfig(const LayerConfig& config, size_t i) {
  if (i >= config.layers.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the config of ", config.class_name, " has ",
                                                   config.layers.size(), " layers, not ", i + 1));
  }
  return &config.layers[i];
}

absl::StatusOr<std::unique_ptr<Module>> Child(const LayerConfig& config, size_t i) {
  SLUICE_ASSIGN_OR_RETURN(const LayerConfig* child, ChildConfig(config, i));
  return LayerFromConfig(*child);
}

// The variable elements of a ResidualBlock: two 3x3 convolutions without bias, a batch norm (4
// per channel) after each, and a 1x1 projection with its batch norm when the shape changes.
int64_t ResidualBlockParameters(int64_t in_channels, int64_t filters, int64_t stride) {
  const bool shortcut = stride != 1 || in_channels != filters;
  int64_t elements = SaturatingProduct({9, in_channels, filters});
  elements = SaturatingAdd(elements, SaturatingProduct({9, filters, filters}));
  elements = SaturatingAdd(elements, SaturatingProduct({shortcut ? 3 : 2, 4, filters}));
  if (shortcut) elements = SaturatingAdd(elements, SaturatingProduct({in_channels, filters}));
  return elements;
}

// The arguments of Dense, Conv2D and ResidualBlock in their configs, read and checked once for
// both the factory and the size function.
struct DenseArgs {
  int64_t units;
  DenseOptions options;
};
struct Conv2DArgs {
  int64_t filters, kernel_h, kernel_w;
  Conv2DLayerOptions options;
};
struct ResidualBlockArgs {
  int64_t in_channels, filters;
  ResidualBlockOptions options;
};

absl::StatusOr<DenseArgs> ReadDense(const LayerConfig& config) {
  DenseArgs args;
  SLUICE_ASSIGN_OR_RETURN(args.units, config.Int("units"));
  SLUICE_RETURN_IF_ERROR(KernelLayer::ReadKernelConfig(config, args.options));
  if (args.units < 1) return absl::InvalidArgumentError(absl::StrCat("Dense: units ", args.units));
  return args;
}

absl::StatusOr<Conv2DArgs> ReadConv2D(const LayerConfig& config) {
  Conv2DArgs args;
  Conv2DLayerOptions& options = args.options;
  SLUICE_ASSIGN_OR_RETURN(args.filters, config.Int("filters"));
  SLUICE_ASSIGN_OR_RETURN(args.kernel_h, config.Int("kernel_h"));
  SLUICE_ASSIGN_OR_RETURN(args.kernel_w, config.Int("kernel_w"));
  SLUICE_ASSIGN_OR_RETURN(options.conv.stride_h, config.Int("stride_h"));
  SLUICE_ASSIGN_OR_RETURN(options.conv.stride_w, config.Int("stride_w"));
  options.conv.dilation_h = config.IntOr("dilation_h", 1);
  options.conv.dilation_w = config.IntOr("dilation_w", 1);
  options.conv.groups = config.IntOr("groups", 1);
  options.conv.keep_compute_dtype = config.IntOr("keep_compute_dtype", 0) != 0;
  SLUICE_RETURN_IF_ERROR(ReadPadding(config, options.conv.padding, options.conv.pads));
  SLUICE_RETURN_IF_ERROR(KernelLayer::ReadKernelConfig(config, options));
  if (args.filters < 1 || args.kernel_h < 1 || args.kernel_w < 1) {
    return absl::InvalidArgumentError(absl::StrCat("Conv2D: filters ", args.filters, ", kernel ",
                                                   args.kernel_h, "x", args.kernel_w));
  }
  if (options.conv.groups < 1 || args.filters % options.conv.groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Conv2D: groups ", options.conv.groups, " must divide the filters (", args.filters, ")"));
  }
  return args;
}

struct DepthwiseConv2DArgs {
  int64_t kernel_h, kernel_w;
  DepthwiseConv2DOptions options;
};

absl::StatusOr<DepthwiseConv2DArgs> ReadDepthwiseConv2D(const LayerConfig& config) {
  DepthwiseConv2DArgs args;
  DepthwiseConv2DOptions& options = args.options;
  SLUICE_ASSIGN_OR_RETURN(args.kernel_h, config.Int("kernel_h"));
  SLUICE_ASSIGN_OR_RETURN(args.kernel_w, config.Int("kernel_w"));
  SLUICE_ASSIGN_OR_RETURN(options.strides.h, config.Int("stride_h"));
  SLUICE_ASSIGN_OR_RETURN(options.strides.w, config.Int("stride_w"));
  options.dilation_rate = {config.IntOr("dilation_h", 1), config.IntOr("dilation_w", 1)};
  SLUICE_ASSIGN_OR_RETURN(options.depth_multiplier, config.Int("depth_multiplier"));
  SLUICE_ASSIGN_OR_RETURN(const std::string padding, config.String("padding"));
  SLUICE_ASSIGN_OR_RETURN(options.padding, ops::ParsePadding(padding));
  SLUICE_RETURN_IF_ERROR(KernelLayer::ReadKernelConfig(config, options));
  if (args.kernel_h < 1 || args.kernel_w < 1 || options.depth_multiplier < 1) {
    return absl::InvalidArgumentError(absl::StrCat("DepthwiseConv2D: kernel ", args.kernel_h, "x",
                                                   args.kernel_w, ", depth_multiplier ",
                                                   options.depth_multiplier));
  }
  return args;
}

absl::StatusOr<Padding2D> ReadZeroPadding2D(const LayerConfig& config) {
  Padding2D p;
  SLUICE_ASSIGN_OR_RETURN(p.top, config.Int("top"));
  SLUICE_ASSIGN_OR_RETURN(p.bottom, config.Int("bottom"));
  SLUICE_ASSIGN_OR_RETURN(p.left, config.Int("left"));
  SLUICE_ASSIGN_OR_RETURN(p.right, config.Int("right"));
  if (p.top < 0 || p.bottom < 0 || p.left < 0 || p.right < 0) {
    return absl::InvalidArgumentError(absl::StrCat("ZeroPadding2D: padding ((", p.top, ", ",
                                                   p.bottom, "), (", p.left, ", ", p.right,
                                                   ")) has a negative side"));
  }
  return p;
}

absl::StatusOr<ReLUOptions> ReadReLU(const LayerConfig& config) {
  ReLUOptions options;
  if (auto it = config.floats.find("max_value"); it != config.floats.end()) {
    options.max_value = static_cast<float>(it->second);
  }
  if (auto it = config.floats.find("negative_slope"); it != config.floats.end()) {
    options.negative_slope = static_cast<float>(it->second);
  }
  if (auto it = config.floats.find("threshold"); it != config.floats.end()) {
    options.threshold = static_cast<float>(it->second);
  }
  if ((options.max_value && !(*options.max_value >= 0)) || !(options.negative_slope >= 0) ||
      !(options.threshold >= 0)) {
    return absl::InvalidArgumentError("ReLU: max_value, negative_slope and threshold must be >= 0");
  }
  return options;
}

// Reshape's target shape; its rank is bounded so that an untrusted config cannot ask for a loop
// of billions of lookups.
absl::StatusOr<std::vector<int64_t>> ReadReshape(const LayerConfig& config) {
  constexpr int64_t kMaxRank = 32;
  SLUICE_ASSIGN_OR_RETURN(const int64_t rank, config.Int("rank"));
  if (rank < 0 || rank > kMaxRank) {
    return absl::InvalidArgumentError(
        absl::StrCat("Reshape: a target shape of rank ", rank, " (at most ", kMaxRank, ")"));
  }
  std::vector<int64_t> target(rank);
  for (int64_t i = 0; i < rank; ++i) {
    SLUICE_ASSIGN_OR_RETURN(target[i], config.Int(absl::StrCat("dim_", i)));
  }
  return target;
}

Made MakeDepthwiseConv2D(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const DepthwiseConv2DArgs args, ReadDepthwiseConv2D(config));
  return std::unique_ptr<Module>(
      std::make_unique<DepthwiseConv2D>(KernelSize(args.kernel_h, args.kernel_w), args.options));
}

Made MakeZeroPadding2D(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const Padding2D padding, ReadZeroPadding2D(config));
  return std::unique_ptr<Module>(std::make_unique<ZeroPadding2D>(padding));
}

// Keras' Activation layer: its "activation" is required (Keras' is), one of Keras' names.
absl::StatusOr<Activation> ReadActivation(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const std::string name, config.String("activation"));
  absl::StatusOr<Activation> activation = ParseActivation(name);
  if (!activation.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("Activation: ", activation.status().message()));
  }
  return *activation;
}

Made MakeActivation(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const Activation activation, ReadActivation(config));
  return std::unique_ptr<Module>(std::make_unique<ActivationLayer>(activation));
}

Made MakeReLU(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const ReLUOptions options, ReadReLU(config));
  return std::unique_ptr<Module>(std::make_unique<ReLU>(options));
}

Made MakeReshape(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<int64_t> target, ReadReshape(config));
  return std::unique_ptr<Module>(std::make_unique<Reshape>(std::move(target)));
}

Made MakeGlobalMaxPool(const LayerConfig& config) {
  return std::unique_ptr<Module>(std::make_unique<GlobalMaxPool>(
      GlobalMaxPoolOptions{.keepdims = config.IntOr("keepdims", 0) != 0}));
}

Made MakeDense(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const DenseArgs args, ReadDense(config));
  return std::unique_ptr<Module>(
      std::make_unique<Dense>(args.units, args.options.activation, args.options));
}

Made MakeConv2D(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const Conv2DArgs args, ReadConv2D(config));
  return std::unique_ptr<Module>(std::make_unique<Conv2D>(
      args.filters, KernelSize(args.kernel_h, args.kernel_w), args.options));
}

Made MakeBatchNorm(const LayerConfig& config) {
  BatchNormOptions options;
  SLUICE_ASSIGN_OR_RETURN(const double momentum, config.Float("momentum"));
  SLUICE_ASSIGN_OR_RETURN(const double epsilon, config.Float("epsilon"));
  options.momentum = static_cast<float>(momentum);
  options.epsilon = static_cast<float>(epsilon);
  return std::unique_ptr<Module>(std::make_unique<BatchNorm>(options));
}

Made MakeDropout(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const double rate, config.Float("rate"));
  SLUICE_RETURN_IF_ERROR(Dropout::CheckRate(static_cast<float>(rate)));
  return std::unique_ptr<Module>(std::make_unique<Dropout>(
      static_cast<float>(rate), static_cast<uint64_t>(config.IntOr("seed", 0))));
}

absl::StatusOr<ResidualBlockArgs> ReadResidualBlock(const LayerConfig& config) {
  ResidualBlockArgs args;
  ResidualBlockOptions& options = args.options;
  SLUICE_ASSIGN_OR_RETURN(args.in_channels, config.Int("in_channels"));
  SLUICE_ASSIGN_OR_RETURN(args.filters, config.Int("filters"));
  SLUICE_ASSIGN_OR_RETURN(options.stride, config.Int("stride"));
  options.seed = static_cast<uint64_t>(config.IntOr("seed", 0));
  options.recompute = config.IntOr("recompute", 0) != 0;
  SLUICE_ASSIGN_OR_RETURN(const double momentum, config.Float("momentum"));
  SLUICE_ASSIGN_OR_RETURN(const double epsilon, config.Float("epsilon"));
  options.batch_norm = {.momentum = static_cast<float>(momentum),
                        .epsilon = static_cast<float>(epsilon)};
  SLUICE_ASSIGN_OR_RETURN(const std::string init, config.String("kernel_initializer"));
  SLUICE_ASSIGN_OR_RETURN(options.kernel_initializer, ParseInitializer(init));
  if (args.in_channels < 1 || args.filters < 1 || options.stride < 1) {
    return absl::InvalidArgumentError(absl::StrCat("ResidualBlock: in_channels ", args.in_channels,
                                                   ", filters ", args.filters, ", stride ",
                                                   options.stride));
  }
  return args;
}

Made MakeResidualBlock(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const ResidualBlockArgs args, ReadResidualBlock(config));
  // The block builds its convolutions and batch norms as it is made: check their size first.
  SLUICE_RETURN_IF_ERROR(CheckParameters(
      "ResidualBlock",
      ResidualBlockParameters(args.in_channels, args.filters, args.options.stride)));
  return std::unique_ptr<Module>(
      std::make_unique<ResidualBlock>(args.in_channels, args.filters, args.options));
}

Made MakeSequential(const LayerConfig& config) {
  auto sequential = std::make_unique<Sequential>();
  for (size_t i = 0; i < config.layers.size(); ++i) {
    absl::StatusOr<std::unique_ptr<Module>> layer = Child(config, i);
    if (!layer.ok()) {
      return WithContext(layer.status(), absl::StrCat("layer ", i, ": "));
    }
    sequential->Add(*std::move(layer));
  }
  for (int k = 0; config.ints.contains(absl::StrCat("recompute_", k, "_begin")); ++k) {
    SLUICE_ASSIGN_OR_RETURN(const int64_t begin,
                            config.Int(absl::StrCat("recompute_", k, "_begin")));
    SLUICE_ASSIGN_OR_RETURN(const int64_t end, config.Int(absl::StrCat("recompute_", k, "_end")));
    if (begin < 0 || end < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Sequential: recompute segment [", begin, ", ", end, ")"));
    }
    SLUICE_RETURN_IF_ERROR(
        sequential->RecomputeLayers(static_cast<size_t>(begin), static_cast<size_t>(end)));
  }
  return std::unique_ptr<Module>(std::move(sequential));
}

Made MakeRecompute(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Module> inner, Child(config, 0));
  return std::unique_ptr<Module>(std::make_unique<Recompute>(std::move(inner)));
}

template <typename M>
Made MakePlain(const LayerConfig&) {
  return std::unique_ptr<Module>(std::make_unique<M>());
}

Made MakeConcatenate(const LayerConfig& config) {
  const int64_t axis = config.IntOr("axis", -1);
  // Concat checks it against the inputs' rank; here only that it is an int.
  if (axis < std::numeric_limits<int>::min() || axis > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("Concatenate: axis ", axis));
  }
  return std::unique_ptr<Module>(std::make_unique<Concatenate>(static_cast<int>(axis)));
}

template <typename M>
Made MakePool(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const ops::Pool2DOptions options, PoolOptions(config));
  return std::unique_ptr<Module>(std::make_unique<M>(options));
}

// The built-in layers' size functions: what each one's Build would create, and what its
// Forward would output, for one input shape, computed from the config without making the layer.
using Sized = absl::StatusOr<LayerSize>;

// A size of `parameters` with the output `dims`, which an untrusted config may have made too
// large for a Shape (InvalidArgument).
Sized Output(const LayerConfig& config, int64_t parameters, absl::Span<const int64_t> dims) {
  absl::StatusOr<Shape> shape = Shape::FromUntrustedDims(dims);
  if (!shape.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(config.class_name, ": its output ", shape.status().message()));
  }
  return LayerSize{.parameters = parameters, .output_shape = *std::move(shape)};
}

absl::Status ExpectNhwc(const LayerConfig& config, const Shape& input) {
  if (input.rank() == 4 && input.dim(3) >= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      config.class_name, ": expects NHWC inputs [batch, height, width, channels], got ",
      input.DebugString()));
}

absl::Status ExpectChannels(const LayerConfig& config, const Shape& input) {
  if (input.rank() >= 1 && input.dim(input.rank() - 1) >= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      config.class_name, ": expects inputs [..., channels], got ", input.DebugString()));
}

// One spatial dimension's output size for a window over `in`.
absl::StatusOr<int64_t> WindowOut(const LayerConfig& config, int64_t in, int64_t kernel,
                                  int64_t stride, int64_t dilation, ops::Padding padding,
                                  int64_t pad_before = 0, int64_t pad_after = 0) {
  absl::StatusOr<ops::Window> window =
      ops::ComputeWindow(in, kernel, stride, dilation, padding, pad_before, pad_after);
  if (!window.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(config.class_name, ": ", window.status().message()));
  }
  return window->out;
}

Sized SizeDense(const LayerConfig& config, const Shape& input) {
  SLUICE_ASSIGN_OR_RETURN(const DenseArgs args, ReadDense(config));
  // As Dense::Build: inputs [batch, features] only (Keras' Dense also takes higher ranks).
  if (input.rank() != 2 || input.dim(1) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Dense: expects inputs [batch, features], got ", input.DebugString(),
                     input.rank() > 2 ? "; add Flatten() or GlobalAvgPool() before it" : ""));
  }
  std::vector<int64_t> dims(input.dims().begin(), input.dims().end());
  const int64_t kernel = SaturatingProduct({dims.back(), args.units});
  dims.back() = args.units;
  return Output(config, SaturatingAdd(kernel, args.options.use_bias ? args.units : 0), dims);
}

Sized SizeConv2D(const LayerConfig& config, const Shape& input) {
  SLUICE_ASSIGN_OR_RETURN(const Conv2DArgs args, ReadConv2D(config));
  SLUICE_RETURN_IF_ERROR(ExpectNhwc(config, input));
  const ops::Conv2DOptions& conv = args.options.conv;
  SLUICE_ASSIGN_OR_RETURN(
      const int64_t h, WindowOut(config, input.dim(1), args.kernel_h, conv.stride_h,
                                 conv.dilation_h, conv.padding, conv.pads.top, conv.pads.bottom));
  SLUICE_ASSIGN_OR_RETURN(
      const int64_t w, WindowOut(config, input.dim(2), args.kernel_w, conv.stride_w,
                                 conv.dilation_w, conv.padding, conv.pads.left, conv.pads.right));
  if (input.dim(3) % conv.groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat("Conv2D: groups ", conv.groups,
                                                   " must divide the input channels, got input ",
                                                   input.DebugString()));
  }
  const int64_t kernel =
      SaturatingProduct({args.kernel_h, args.kernel_w, input.dim(3) / conv.groups, args.filters});
  return Output(config, SaturatingAdd(kernel, args.options.use_bias ? args.filters : 0),
                {input.dim(0), h, w, args.filters});
}

Sized SizeDepthwiseConv2D(const LayerConfig& config, const Shape& input) {
  SLUICE_ASSIGN_OR_RETURN(const DepthwiseConv2DArgs args, ReadDepthwiseConv2D(config));
  SLUICE_RETURN_IF_ERROR(ExpectNhwc(config, input));
  const DepthwiseConv2DOptions& o = args.options;
  SLUICE_ASSIGN_OR_RETURN(const int64_t h, WindowOut(config, input.dim(1), args.kernel_h,
                                                     o.strides.h, o.dilation_rate.h, o.padding));
  SLUICE_ASSIGN_OR_RETURN(const int64_t w, WindowOut(config, input.dim(2), args.kernel_w,
                                                     o.strides.w, o.dilation_rate.w, o.padding));
  const int64_t channels = SaturatingProduct({input.dim(3), o.depth_multiplier});
  const int64_t kernel = SaturatingProduct({args.kernel_h, args.kernel_w, channels});
  return Output(config, SaturatingAdd(kernel, o.use_bias ? channels : 0),
                {input.dim(0), h, w, channels});
}

Sized SizeZeroPadding2D(const LayerConfig& config, const Shape& input) {
  SLUICE_ASSIGN_OR_RETURN(const Padding2D p, ReadZeroPadding2D(config));
  SLUICE_RETURN_IF_ERROR(ExpectNhwc(config, input));
  return Output(config, 0,
                {input.dim(0), SaturatingAdd(SaturatingAdd(input.dim(1), p.top), p.bottom),
                 SaturatingAdd(SaturatingAdd(input.dim(2), p.left), p.right), input.dim(3)});
}

// ReLU: no variables, the input's shape.
Sized SizeReLU(const LayerConfig& config, const Shape& input) {
  SLUICE_RETURN_IF_ERROR(ReadReLU(config).status());
  return Output(config, 0, input.dims());
}

// Activation: no variables, the input's shape.
Sized SizeActivation(const LayerConfig& config, const Shape& input) {
  SLUICE_RETURN_IF_ERROR(ReadActivation(config).status());
  return Output(config, 0, input.dims());
}

Sized SizeReshape(const LayerConfig& config, const Shape& input) {
  SLUICE_ASSIGN_OR_RETURN(const std::vector<int64_t> target, ReadReshape(config));
  SLUICE_ASSIGN_OR_RETURN(const Shape shape, Reshape::OutputShape(target, input));
  return Output(config, 0, shape.dims());
}

Sized SizeGlobalMaxPool(const LayerConfig& config, const Shape& input) {
  SLUICE_RETURN_IF_ERROR(ExpectNhwc(config, input));
  if (config.IntOr("keepdims", 0) != 0)
    return Output(config, 0, {input.dim(0), 1, 1, input.dim(3)});
  return Output(config, 0, {input.dim(0), input.dim(3)});
}

Sized SizeBatchNorm(const LayerConfig& config, const Shape& input) {
  SLUICE_RETURN_IF_ERROR(ExpectChannels(config, input));
  // gamma, beta, the moving mean and the moving variance
  return Output(config, SaturatingProduct({4, input.dim(input.rank() - 1)}), input.dims());
}

Sized SizeResidualBlock(const LayerConfig& config, const Shape& input) {
  SLUICE_ASSIGN_OR_RETURN(const ResidualBlockArgs args, ReadResidualBlock(config));
  SLUICE_RETURN_IF_ERROR(ExpectNhwc(config, input));
  if (input.dim(3) != args.in_channels) {
    return absl::InvalidArgumentError(absl::StrCat("ResidualBlock: made for ", args.in_channels,
                                                   " input channels, got input ",
                                                   input.DebugString()));
  }
  // conv1 and the projection are "same" padded with the block's stride, conv2 with stride 1.
  const int64_t stride = args.options.stride;
  SLUICE_ASSIGN_OR_RETURN(const int64_t h,
                          WindowOut(config, input.dim(1), 3, stride, 1, ops::Padding::kSame, 0, 0));
  SLUICE_ASSIGN_OR_RETURN(const int64_t w,
                          WindowOut(config, input.dim(2), 3, stride, 1, ops::Padding::kSame, 0, 0));
  return Output(config, ResidualBlockParameters(args.in_channels, args.filters, stride),
                {input.dim(0), h, w, args.filters});
}

// Dropout: the input's shape, and one variable element, its count of training calls (which a
// checkpoint saves so that a resumed run draws the same masks).
Sized SizeDropout(const LayerConfig& config, const Shape& input) {
  SLUICE_ASSIGN_OR_RETURN(const double rate, config.Float("rate"));
  SLUICE_RETURN_IF_ERROR(Dropout::CheckRate(static_cast<float>(rate)));
  return Output(config, 1, input.dims());
}

Sized SizeFlatten(const LayerConfig& config, const Shape& input) {
  if (input.rank() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Flatten: expects inputs of rank >= 1, got ", input.DebugString()));
  }
  return Output(config, 0, {input.dim(0), SaturatingProduct(input.dims().subspan(1))});
}

Sized SizeGlobalAvgPool(const LayerConfig& config, const Shape& input) {
  SLUICE_RETURN_IF_ERROR(ExpectNhwc(config, input));
  return Output(config, 0, {input.dim(0), input.dim(3)});
}

Sized SizePool(const LayerConfig& config, const Shape& input) {
  SLUICE_ASSIGN_OR_RETURN(const ops::Pool2DOptions options, PoolOptions(config));
  SLUICE_RETURN_IF_ERROR(ExpectNhwc(config, input));
  SLUICE_ASSIGN_OR_RETURN(const int64_t h,
                          WindowOut(config, input.dim(1), options.window_h, options.stride_h, 1,
                                    options.padding, options.pads.top, options.pads.bottom));
  SLUICE_ASSIGN_OR_RETURN(const int64_t w,
                          WindowOut(config, input.dim(2), options.window_w, options.stride_w, 1,
                                    options.padding, options.pads.left, options.pads.right));
  return Output(config, 0, {input.dim(0), h, w, input.dim(3)});
}

// Each layer sized for its predecessor's output, under the prefix Sequential gives its
// variables; the sizing stops at a layer of unknown size.
Sized SizeSequential(const LayerConfig& config, const Shape& input) {
  LayerSize size;
  Shape x = input;
  for (size_t i = 0; i < config.layers.size(); ++i) {
    absl::StatusOr<LayerSize> layer = LayerSizeFromConfig(config.layers[i], x);
    if (!layer.ok()) {
      return WithContext(layer.status(), absl::StrCat("layer ", i, ": "));
    }
    layer->prefix = absl::StrCat(i, "/");
    size.parameters = SaturatingAdd(size.parameters, layer->parameters);
    const bool known = layer->known;
    if (known) x = layer->output_shape;
    size.layers.push_back(*std::move(layer));
    if (!known) {
      size.known = false;
      break;
    }
  }
  size.output_shape = std::move(x);
  return size;
}

// A merge layer takes several inputs: FunctionalSize sizes its calls.
Sized SizeMerge(const LayerConfig& config, const Shape&) {
  return absl::InvalidArgumentError(
      absl::StrCat(config.class_name, ": takes 2 or more inputs, in a functional model"));
}

// Recompute's variables are its layer's, named as they are.
Sized SizeRecompute(const LayerConfig& config, const Shape& input) {
  SLUICE_ASSIGN_OR_RETURN(const LayerConfig* inner, ChildConfig(config, 0));
  return LayerSizeFromConfig(*inner, input);
}

struct Registered {
  LayerFactory factory;
  LayerSizeFunction size;  // may be null (a user's layer)
};

struct Registry {
  Mutex mu;
  absl::flat_hash_map<std::string, Registered> classes ABSL_GUARDED_BY(mu);
};

Registry& TheRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;
    MutexLock l(&r->mu);
    r->classes = {{"Dense", {MakeDense, SizeDense}},
                  {"Conv2D", {MakeConv2D, SizeConv2D}},
                  {"BatchNorm", {MakeBatchNorm, SizeBatchNorm}},
                  {"Dropout", {MakeDropout, SizeDropout}},
                  {"ResidualBlock", {MakeResidualBlock, SizeResidualBlock}},
                  {"Sequential", {MakeSequential, SizeSequential}},
                  {"Recompute", {MakeRecompute, SizeRecompute}},
                  {"ReLU", {MakeReLU, SizeReLU}},
                  {"Activation", {MakeActivation, SizeActivation}},
                  {"DepthwiseConv2D", {MakeDepthwiseConv2D, SizeDepthwiseConv2D}},
                  {"ZeroPadding2D", {MakeZeroPadding2D, SizeZeroPadding2D}},
                  {"Reshape", {MakeReshape, SizeReshape}},
                  {"GlobalMaxPool", {MakeGlobalMaxPool, SizeGlobalMaxPool}},
                  {"Flatten", {MakePlain<Flatten>, SizeFlatten}},
                  {"GlobalAvgPool", {MakePlain<GlobalAvgPool>, SizeGlobalAvgPool}},
                  {"MaxPool", {MakePool<MaxPool>, SizePool}},
                  {"AvgPool", {MakePool<AvgPool>, SizePool}},
                  {"Functional", {FunctionalFromConfig, FunctionalSize}},
                  {"Add", {MakePlain<Add>, SizeMerge}},
                  {"Multiply", {MakePlain<Multiply>, SizeMerge}},
                  {"Concatenate", {MakeConcatenate, SizeMerge}}};
    return r;
  }();
  return *registry;
}

// What is registered for `class_name`; NotFound naming the registered classes.
absl::StatusOr<Registered> Find(const std::string& class_name) {
  Registry& r = TheRegistry();
  MutexLock l(&r.mu);
  auto it = r.classes.find(class_name);
  if (it != r.classes.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [name, registered] : r.classes) names.push_back(name);
  std::sort(names.begin(), names.end());
  return absl::NotFoundError(absl::StrCat("no layer factory for '", class_name,
                                          "' (registered: ", absl::StrJoin(names, ", "),
                                          "); a custom layer calls RegisterLayer"));
}

}  // namespace

absl::StatusOr<int64_t> LayerConfig::Int(const std::string& key) const {
  auto it = ints.find(key);
  if (it == ints.end()) return Missing(*this, key);
  return it->second;
}

absl::StatusOr<double> LayerConfig::Float(const std::string& key) const {
  auto it = floats.find(key);
  if (it == floats.end()) return Missing(*this, key);
  return it->second;
}

absl::StatusOr<std::string> LayerConfig::String(const std::string& key) const {
  auto it = strings.find(key);
  if (it == strings.end()) return Missing(*this, key);
  return it->second;
}

int64_t LayerConfig::IntOr(const std::string& key, int64_t fallback) const {
  auto it = ints.find(key);
  return it == ints.end() ? fallback : it->second;
}

LayerConfig PoolConfig(const char* class_name, const ops::Pool2DOptions& options) {
  LayerConfig config{.class_name = class_name,
                     .ints = {{"window_h", options.window_h},
                              {"window_w", options.window_w},
                              {"stride_h", options.stride_h},
                              {"stride_w", options.stride_w}}};
  AddPaddingConfig(options.padding, options.pads, config);
  return config;
}

void AddPaddingConfig(ops::Padding padding, const ops::Pads& pads, LayerConfig& config) {
  config.strings["padding"] = ops::PaddingName(padding);
  if (padding != ops::Padding::kExplicit) return;
  config.ints["pad_top"] = pads.top;
  config.ints["pad_bottom"] = pads.bottom;
  config.ints["pad_left"] = pads.left;
  config.ints["pad_right"] = pads.right;
}

absl::Status ReadPadding(const LayerConfig& config, ops::Padding& padding, ops::Pads& pads) {
  SLUICE_ASSIGN_OR_RETURN(const std::string name, config.String("padding"));
  SLUICE_ASSIGN_OR_RETURN(padding, ops::ParsePadding(name));
  pads = {};
  if (padding != ops::Padding::kExplicit) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(pads.top, config.Int("pad_top"));
  SLUICE_ASSIGN_OR_RETURN(pads.bottom, config.Int("pad_bottom"));
  SLUICE_ASSIGN_OR_RETURN(pads.left, config.Int("pad_left"));
  SLUICE_ASSIGN_OR_RETURN(pads.right, config.Int("pad_right"));
  return absl::OkStatus();
}

absl::Status RegisterLayer(const std::string& class_name, LayerFactory factory,
                           LayerSizeFunction size) {
  Registry& r = TheRegistry();
  MutexLock l(&r.mu);
  if (!r.classes.emplace(class_name, Registered{std::move(factory), std::move(size)}).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("a layer factory is registered for '", class_name, "' already"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Module>> LayerFromConfig(const LayerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(const Registered registered, Find(config.class_name));
  return registered.factory(config);
}

absl::StatusOr<LayerSize> LayerSizeFromConfig(const LayerConfig& config, const Shape& input_shape) {
  SLUICE_ASSIGN_OR_RETURN(const Registered registered, Find(config.class_name));
  LayerSize size{.known = false};
  if (registered.size != nullptr) {
    SLUICE_ASSIGN_OR_RETURN(size, registered.size(config, input_shape));
    if (size.parameters < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          config.class_name, ": its size function gives ", size.parameters, " parameters"));
    }
  }
  size.class_name = config.class_name;
  size.prefix.clear();
  return size;
}

}  // namespace sluice::train::layers
