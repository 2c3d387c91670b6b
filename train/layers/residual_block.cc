#include "train/layers/residual_block.h"

#include "core/status_macros.h"
#include "train/layers/layer_seed.h"
#include "train/layers/recompute.h"
#include "train/ops/add_relu.h"

namespace sluice::train::layers {
namespace {

Conv2DLayerOptions ConvOptions(int64_t stride, const ResidualBlockOptions& options,
                               uint64_t seed_offset) {
  // Under mixed_bfloat16 the activations stay bfloat16 from each convolution through its batch
  // norm (and the ReLU between the convolutions) to the block's output (added in float32): the
  // next block reads them so, and a float32-only op after the last block casts them (AutoCast).
  return {.conv = {.stride_h = stride,
                   .stride_w = stride,
                   .padding = ops::Padding::kSame,
                   .keep_compute_dtype = true},
          .use_bias = false,
          .kernel_initializer = options.kernel_initializer,
          .seed = *options.seed + seed_offset};
}

}  // namespace

ResidualBlock::ResidualBlock(int64_t in_channels, int64_t filters, ResidualBlockOptions options)
    : in_channels_(in_channels),
      filters_(filters),
      options_([&] {
        options.seed = ResolveLayerSeed(options.seed);
        return options;
      }()),
      conv1_(in_channels, filters, 3, 3, ConvOptions(options_.stride, options_, 0)),
      bn1_(filters, options.batch_norm),
      conv2_(filters, filters, 3, 3, ConvOptions(1, options_, 1)),
      bn2_(filters, options.batch_norm) {
  if (options.stride != 1 || in_channels != filters) {
    shortcut_conv_.emplace(in_channels, filters, 1, 1, ConvOptions(options_.stride, options_, 2));
    shortcut_bn_.emplace(filters, options.batch_norm);
  }
  PrefixVariableNames(conv1_, "conv1/");
  PrefixVariableNames(bn1_, "bn1/");
  PrefixVariableNames(conv2_, "conv2/");
  PrefixVariableNames(bn2_, "bn2/");
  if (shortcut_conv_) {
    PrefixVariableNames(*shortcut_conv_, "shortcut_conv/");
    PrefixVariableNames(*shortcut_bn_, "shortcut_bn/");
  }
}

absl::StatusOr<Tensor> ResidualBlock::ConvBatchNorm(const char* name, Conv2D& conv, BatchNorm& bn,
                                                    const Tensor& input, bool training, bool relu) {
  auto conv_bn = [&conv, &bn, relu](const Tensor& x, bool t) -> absl::StatusOr<Tensor> {
    SLUICE_ASSIGN_OR_RETURN(Tensor y, conv.Forward(x, t));
    return relu ? bn.ForwardRelu(y, t) : bn.Forward(y, t);
  };
  if (!options_.recompute) return conv_bn(input, training);
  // The segment's output is kept by the next convolution alone; the fused ReLU's mask is
  // recomputed with the rest.
  return RecomputeGrad(name, {&conv, &bn}, input, training, conv_bn);
}

absl::StatusOr<Tensor> ResidualBlock::Forward(const Tensor& input, bool training) {
  // The projection first, so that its backward runs last: the input's gradient from it is made
  // after the main branch's backward instead of being held through it (with `recompute`, a
  // tensor of the input's size less at the peak of the block's backward). Same result.
  Tensor shortcut = input;
  if (shortcut_conv_) {
    SLUICE_ASSIGN_OR_RETURN(shortcut, ConvBatchNorm("residual_block shortcut", *shortcut_conv_,
                                                    *shortcut_bn_, input, training,
                                                    /*relu=*/false));
  }
  // The ReLU between the convolutions in the batch norm's pass (BatchNorm::ForwardRelu).
  SLUICE_ASSIGN_OR_RETURN(Tensor y, ConvBatchNorm("residual_block conv1/bn1", conv1_, bn1_, input,
                                                  training, /*relu=*/true));
  SLUICE_ASSIGN_OR_RETURN(y, ConvBatchNorm("residual_block conv2/bn2", conv2_, bn2_, y, training,
                                           /*relu=*/false));
  return ops::AddRelu(y, shortcut, /*keep_compute_dtype=*/true);
}

std::vector<Module*> ResidualBlock::Children() {
  std::vector<Module*> children = {&conv1_, &bn1_, &conv2_, &bn2_};
  if (shortcut_conv_) {
    children.push_back(&*shortcut_conv_);
    children.push_back(&*shortcut_bn_);
  }
  return children;
}

absl::StatusOr<LayerConfig> ResidualBlock::GetConfig() {
  return LayerConfig{.class_name = "ResidualBlock",
                     .ints = {{"in_channels", in_channels_},
                              {"filters", filters_},
                              {"stride", options_.stride},
                              {"recompute", options_.recompute ? 1 : 0},
                              {"seed", static_cast<int64_t>(*options_.seed)}},
                     .floats = {{"momentum", options_.batch_norm.momentum},
                                {"epsilon", options_.batch_norm.epsilon}},
                     .strings = {{"kernel_initializer",
                                  std::string(InitializerName(options_.kernel_initializer))}}};
}

}  // namespace sluice::train::layers
