#include "train/layers/layer_config.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "train/layers/activation_layer.h"
#include "train/layers/avg_pool.h"
#include "train/layers/batch_norm.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/depthwise_conv2d.h"
#include "train/layers/dropout.h"
#include "train/layers/flatten.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/global_max_pool.h"
#include "train/layers/max_pool.h"
#include "train/layers/module.h"
#include "train/layers/recompute.h"
#include "train/layers/relu.h"
#include "train/layers/reshape.h"
#include "train/layers/residual_block.h"
#include "train/layers/sequential.h"
#include "train/layers/zero_padding2d.h"
#include "train/models/model_zoo.h"

namespace sluice::train::layers {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

int64_t CountElements(Module& module) {
  int64_t n = 0;
  for (autodiff::Variable* v : module.Variables()) n += v->value().num_elements();
  return n;
}

// Builds `module` for `input`, then checks that the size its config gives is what it holds and
// outputs, and so for each layer of a Sequential.
void ExpectSizeOfBuilt(Module& module, const Shape& input) {
  ASSERT_TRUE(module.Build(input).ok());
  absl::StatusOr<LayerConfig> config = module.GetConfig();
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<LayerSize> size = LayerSizeFromConfig(*config, input);
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_TRUE(size->known);
  EXPECT_EQ(size->class_name, config->class_name);
  EXPECT_EQ(size->parameters, CountElements(module));
  absl::StatusOr<Tensor> out = module.Forward(Tensor::Zeros(DType::kFloat32, input), false);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(size->output_shape, out->shape());
  auto* sequential = dynamic_cast<Sequential*>(&module);
  if (sequential == nullptr) return;
  const std::vector<Module*> children = sequential->Children();
  ASSERT_EQ(size->layers.size(), children.size());
  for (size_t i = 0; i < children.size(); ++i) {
    SCOPED_TRACE(size->layers[i].class_name);
    EXPECT_EQ(size->layers[i].prefix, absl::StrCat(i, "/"));
    EXPECT_EQ(size->layers[i].parameters, CountElements(*children[i]));
  }
}

TEST(LayerSizeTest, EveryZooModelsSizeIsWhatItBuilds) {
  for (const std::string& name : models::ModelNames()) {
    for (bool recompute : {false, true}) {
      if (recompute && !models::IsResNet(name)) continue;
      SCOPED_TRACE(name + (recompute ? " with recompute" : ""));
      auto model = models::MakeModel(name, {.height = 12, .width = 10, .channels = 3}, 1,
                                     {.recompute = recompute});
      ASSERT_TRUE(model.ok()) << model.status();
      ExpectSizeOfBuilt(**model, Shape{2, 12, 10, 3});
    }
  }
}

// Every built-in layer, with options off their defaults: strides, dilation, both paddings, no
// bias, a projection shortcut, odd sizes.
TEST(LayerSizeTest, EveryBuiltInLayersSizeIsWhatItBuilds) {
  Sequential model{Conv2D(6, {3, 2},
                          {.conv = {.stride_h = 2, .dilation_w = 2, .padding = ops::Padding::kSame},
                           .use_bias = false}),
                   BatchNorm(),
                   ReLU(),
                   MaxPool({.window_h = 3, .window_w = 2, .stride_h = 1, .stride_w = 2}),
                   Conv2D(5, {2, 2}, {.conv = {.stride_h = 3, .stride_w = 1, .dilation_h = 2}}),
                   ResidualBlock(5, 8, {.stride = 2}),
                   ResidualBlock(8, 8),
                   AvgPool({.window_h = 2,
                            .window_w = 2,
                            .stride_h = 1,
                            .stride_w = 1,
                            .padding = ops::Padding::kSame}),
                   Dropout(0.25f, 7),
                   Flatten(),
                   Dense(7),
                   Dense(3, Activation::kLinear, {.use_bias = false})};
  ExpectSizeOfBuilt(model, Shape{1, 23, 17, 3});
  // Explicit padding (ONNX's and PyTorch's), saved and sized, and made again the same.
  Sequential padded{Conv2D(4, 3,
                           {.conv = {.stride_h = 2,
                                     .padding = ops::Padding::kExplicit,
                                     .pads = {.top = 1, .bottom = 2, .left = 0, .right = 1}},
                            .seed = 3}),
                    MaxPool({.window_h = 3,
                             .window_w = 3,
                             .padding = ops::Padding::kExplicit,
                             .pads = {.top = 1, .bottom = 1, .left = 1, .right = 1}})};
  ExpectSizeOfBuilt(padded, Shape{1, 11, 8, 2});
  auto remade = LayerFromConfig(*padded.GetConfig());
  ASSERT_TRUE(remade.ok()) << remade.status();
  ASSERT_TRUE((*remade)->Build(Shape{1, 11, 8, 2}).ok());
  EXPECT_EQ((*remade)->GetConfig()->strings, padded.GetConfig()->strings);
  EXPECT_EQ((*remade)->GetConfig()->layers[0].ints, padded.GetConfig()->layers[0].ints);
  Sequential pooled{Conv2D(4, 3), GlobalAvgPool(), Dense(2)};
  ExpectSizeOfBuilt(pooled, Shape{3, 9, 9, 2});
  // The layers of functional graphs (issue 47), off their defaults too.
  Sequential functional{
      ZeroPadding2D({1, 2}, {0, 3}),
      DepthwiseConv2D(3, {.strides = 2, .padding = ops::Padding::kSame, .depth_multiplier = 2}),
      DepthwiseConv2D({2, 3}, {.dilation_rate = {2, 1}, .use_bias = false}),
      Conv2D(6, 1, {.conv = {.groups = 2}}),
      Conv2D(6, 3, {.conv = {.padding = ops::Padding::kSame, .groups = 3}, .use_bias = false}),
      Conv2D(6, 1, {.conv = {.keep_compute_dtype = true}}),
      ReLU({.max_value = 6}),
      ReLU({.negative_slope = 0.1f, .threshold = 0.5f}),
      ActivationLayer(Activation::kSoftmax),
      GlobalMaxPool({.keepdims = true}),
      Reshape({-1, 2}),
      Flatten(),
      Dense(2)};
  ExpectSizeOfBuilt(functional, Shape{2, 13, 11, 4});
  // keep_compute_dtype is saved, and only where set.
  auto remade_functional = LayerFromConfig(*functional.GetConfig());
  ASSERT_TRUE(remade_functional.ok()) << remade_functional.status();
  ASSERT_TRUE((*remade_functional)->Build(Shape{2, 13, 11, 4}).ok());
  const LayerConfig kept = (*remade_functional)->GetConfig()->layers[5];
  EXPECT_EQ(kept.ints, functional.GetConfig()->layers[5].ints);
  EXPECT_EQ(kept.ints.at("keep_compute_dtype"), 1);
  EXPECT_FALSE(functional.GetConfig()->layers[4].ints.contains("keep_compute_dtype"));
  Sequential flat_max{Conv2D(4, 3), GlobalMaxPool(), Dense(2)};
  ExpectSizeOfBuilt(flat_max, Shape{3, 9, 9, 2});
  auto inner = std::make_unique<Sequential>();
  inner->Add(std::make_unique<Dense>(4)).Add(std::make_unique<Dense>(2));
  Recompute wrapped(std::move(inner));
  ExpectSizeOfBuilt(wrapped, Shape{2, 5});
}

TEST(LayerSizeTest, NestedLayersGetTheirContainersPrefixes) {
  LayerConfig inner{
      .class_name = "Sequential",
      .layers = {{.class_name = "ReLU"}, {.class_name = "Dense", .ints = {{"units", 3}}}}};
  LayerConfig outer{.class_name = "Sequential",
                    .layers = {{.class_name = "Dense", .ints = {{"units", 4}}}, inner}};
  absl::StatusOr<LayerSize> size = LayerSizeFromConfig(outer, Shape{1, 2});
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(size->parameters, (2 * 4 + 4) + (4 * 3 + 3));
  ASSERT_EQ(size->layers.size(), 2u);
  EXPECT_EQ(size->layers[1].prefix, "1/");
  ASSERT_EQ(size->layers[1].layers.size(), 2u);
  EXPECT_EQ(size->layers[1].layers[1].prefix, "1/");  // its own, within "1/": "1/1/dense/..."
  EXPECT_EQ(size->layers[1].layers[1].parameters, 15);
  EXPECT_EQ(size->output_shape, (Shape{1, 3}));
}

// A saved model's config is untrusted: sizes saturate, shapes past Shape's limits and windows
// whose span overflows are errors, and nothing is allocated.
TEST(LayerSizeTest, HugeConfigsSaturateOrFailWithoutOverflow) {
  LayerConfig dense{.class_name = "Dense", .ints = {{"units", int64_t{1} << 40}}};
  absl::StatusOr<LayerSize> size = LayerSizeFromConfig(dense, Shape{1, 1 << 30});
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(size->parameters, kMax);
  dense.ints["units"] = kMax;
  EXPECT_EQ(LayerSizeFromConfig(dense, Shape{1, 3}).status().code(),
            absl::StatusCode::kInvalidArgument);  // an output of 2^63 elements

  LayerConfig conv{.class_name = "Conv2D",
                   .ints = {{"filters", 1},
                            {"kernel_h", kMax},
                            {"kernel_w", 1},
                            {"stride_h", 1},
                            {"stride_w", 1},
                            {"dilation_h", 3}},
                   .strings = {{"padding", "same"}}};
  absl::Status s = LayerSizeFromConfig(conv, Shape{1, 4, 4, 1}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("out of range"));
  conv.ints["kernel_h"] = 1;
  conv.ints["stride_h"] = kMax;  // "same": one output row, no overflow
  size = LayerSizeFromConfig(conv, Shape{1, 4, 4, 1});
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(size->output_shape, (Shape{1, 1, 4, 1}));

  LayerConfig block{.class_name = "ResidualBlock",
                    .ints = {{"in_channels", 3}, {"filters", int64_t{1} << 40}, {"stride", 1}},
                    .floats = {{"momentum", 0.99}, {"epsilon", 1e-3}},
                    .strings = {{"kernel_initializer", "he_normal"}}};
  size = LayerSizeFromConfig(block, Shape{1, 4, 4, 3});
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(size->parameters, kMax);
  s = LayerSizeFromConfig(block, Shape{1, 4, 4, 2}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("made for 3 input channels"));
}

TEST(LayerSizeTest, InputsALayerCannotTakeAreErrorsNamingTheLayer) {
  const LayerConfig seq{.class_name = "Sequential",
                        .layers = {{.class_name = "Flatten"}, {.class_name = "GlobalAvgPool"}}};
  absl::Status s = LayerSizeFromConfig(seq, Shape{1, 4, 4, 3}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("layer 1: GlobalAvgPool: expects NHWC inputs"));
  EXPECT_EQ(LayerSizeFromConfig({.class_name = "NoSuchLayer"}, Shape{1}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(LayerSizeFromConfig({.class_name = "Recompute"}, Shape{1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A user's layer sizes itself when it registers a size function; without one its size is
// unknown, and a Sequential sizes the layers before it only.
TEST(LayerSizeTest, AUsersLayerIsSizedByItsOwnFunctionOrUnknown) {
  auto no_factory = [](const LayerConfig&) -> absl::StatusOr<std::unique_ptr<Module>> {
    return absl::UnimplementedError("not made in this test");
  };
  ASSERT_TRUE(RegisterLayer("TestUnsized", no_factory).ok());
  ASSERT_TRUE(
      RegisterLayer("TestSized", no_factory,
                    [](const LayerConfig& c, const Shape& input) -> absl::StatusOr<LayerSize> {
                      return LayerSize{.parameters = c.IntOr("n", 0), .output_shape = input};
                    })
          .ok());
  absl::StatusOr<LayerSize> size =
      LayerSizeFromConfig({.class_name = "TestSized", .ints = {{"n", 9}}}, Shape{1, 2});
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_TRUE(size->known);
  EXPECT_EQ(size->parameters, 9);
  EXPECT_EQ(size->class_name, "TestSized");
  EXPECT_EQ(LayerSizeFromConfig({.class_name = "TestSized", .ints = {{"n", -1}}}, Shape{1, 2})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);

  const LayerConfig seq{.class_name = "Sequential",
                        .layers = {{.class_name = "Dense", .ints = {{"units", 4}}},
                                   {.class_name = "TestUnsized"},
                                   {.class_name = "Dense", .ints = {{"units", 2}}}}};
  size = LayerSizeFromConfig(seq, Shape{1, 3});
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_FALSE(size->known);
  EXPECT_EQ(size->parameters, 3 * 4 + 4);  // a lower bound
  ASSERT_EQ(size->layers.size(), 2u);      // the last Dense's input is unknown
  EXPECT_FALSE(size->layers[1].known);
}

}  // namespace
}  // namespace sluice::train::layers
