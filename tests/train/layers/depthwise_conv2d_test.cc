// DepthwiseConv2D (train/layers/depthwise_conv2d.h): Keras' kernel shape, values by hand and
// against the definition written out in loops, finite differences, its config, and errors.
#include "train/layers/depthwise_conv2d.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "tests/train/gradient_check.h"
#include "tests/train/module_gradient_check.h"
#include "train/layers/layer_config.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::CheckModuleGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(DepthwiseConv2DTest, KerasShapesAndNames) {
  DepthwiseConv2D layer(3, {.depth_multiplier = 2});
  ASSERT_TRUE(layer.Build(Shape{1, 5, 5, 4}).ok());
  EXPECT_EQ(layer.kernel().shape(), Shape({3, 3, 4, 2}));
  ASSERT_NE(layer.bias(), nullptr);
  EXPECT_EQ(layer.bias()->shape(), Shape({8}));
  EXPECT_EQ(layer.kernel().name(), "depthwise_conv2d/kernel");
  EXPECT_EQ(layer.name(), "depthwise_conv2d");
  DepthwiseConv2D no_bias({1, 2}, {.use_bias = false});
  ASSERT_TRUE(no_bias.Build(Shape{1, 5, 5, 3}).ok());
  EXPECT_EQ(no_bias.bias(), nullptr);
  EXPECT_EQ(no_bias.kernel().shape(), Shape({1, 2, 3, 1}));
}

// Two channels, 1..4 and 10..40 as [1, 2, 2, 2]; a 2x2 kernel, depth_multiplier 2:
// channel 0's filters are all-ones and the diagonal, channel 1's the anti-diagonal and -1 at
// the top left. Outputs (channel c * 2 + m): 1+2+3+4, 1+4, 20+30, -10, plus the bias.
TEST(DepthwiseConv2DTest, ValuesByHand) {
  DepthwiseConv2D layer(2, {.depth_multiplier = 2});
  ASSERT_TRUE(layer.Build(Shape{1, 2, 2, 2}).ok());
  // Kernel [kh, kw, c, m], row-major: entry (p, q, c, m) at ((p * 2 + q) * 2 + c) * 2 + m.
  std::vector<float> k(16, 0);
  auto at = [&](int p, int q, int c, int m) -> float& { return k[((p * 2 + q) * 2 + c) * 2 + m]; };
  for (int p = 0; p < 2; ++p) {
    for (int q = 0; q < 2; ++q) at(p, q, 0, 0) = 1;
  }
  at(0, 0, 0, 1) = at(1, 1, 0, 1) = 1;
  at(0, 1, 1, 0) = at(1, 0, 1, 0) = 1;
  at(0, 0, 1, 1) = -1;
  ASSERT_TRUE(layer.kernel().Assign(T(k, {2, 2, 2, 2})).ok());
  ASSERT_TRUE(layer.bias()->Assign(T({0, 0.5f, 0, 100}, {4})).ok());
  const Tensor x = T({1, 10, 2, 20, 3, 30, 4, 40}, {1, 2, 2, 2});
  absl::StatusOr<Tensor> y = layer.Forward(x, false);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({1, 1, 1, 4}));
  EXPECT_THAT(Values(*y), ElementsAre(10, 5.5f, 50, 90));
}

// The definition in float64 loops: output channel c * m + j reads input channel c alone.
std::vector<double> Reference(const Tensor& x, const Tensor& kernel, const Tensor* bias,
                              const DepthwiseConv2DOptions& o) {
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
  const int64_t kh = kernel.dim(0), kw = kernel.dim(1), m = kernel.dim(3);
  const ops::Window wh = *ops::ComputeWindow(h, kh, o.strides.h, o.dilation_rate.h, o.padding);
  const ops::Window ww = *ops::ComputeWindow(w, kw, o.strides.w, o.dilation_rate.w, o.padding);
  std::vector<double> out;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t i = 0; i < wh.out; ++i) {
      for (int64_t j = 0; j < ww.out; ++j) {
        for (int64_t ch = 0; ch < c; ++ch) {
          for (int64_t k = 0; k < m; ++k) {
            double sum = bias != nullptr ? bias->data<float>()[ch * m + k] : 0;
            for (int64_t p = 0; p < kh; ++p) {
              for (int64_t q = 0; q < kw; ++q) {
                const int64_t y = i * o.strides.h + p * o.dilation_rate.h - wh.pad_before;
                const int64_t z = j * o.strides.w + q * o.dilation_rate.w - ww.pad_before;
                if (y < 0 || y >= h || z < 0 || z >= w) continue;
                sum += static_cast<double>(x.data<float>()[((b * h + y) * w + z) * c + ch]) *
                       kernel.data<float>()[((p * kw + q) * c + ch) * m + k];
              }
            }
            out.push_back(sum);
          }
        }
      }
    }
  }
  return out;
}

TEST(DepthwiseConv2DTest, MatchesItsDefinitionWithStridesPaddingDilationAndMultiplier) {
  const std::vector<std::pair<KernelSize, DepthwiseConv2DOptions>> cases = {
      {3, {}},
      {3, {.strides = 2, .padding = ops::Padding::kSame, .depth_multiplier = 3}},
      {{2, 3}, {.strides = {1, 2}, .depth_multiplier = 2, .dilation_rate = {2, 1}}},
      {3, {.padding = ops::Padding::kSame, .dilation_rate = 2, .use_bias = false}},
  };
  for (const auto& [size, options] : cases) {
    DepthwiseConv2D layer(size, options);
    const Tensor x = RandomTensor({2, 7, 8, 3}, 21);
    ASSERT_TRUE(layer.Build(x.shape()).ok());
    if (layer.bias() != nullptr) {
      ASSERT_TRUE(layer.bias()->Assign(RandomTensor(layer.bias()->shape(), 22)).ok());
    }
    absl::StatusOr<Tensor> y = layer.Forward(x, false);
    ASSERT_TRUE(y.ok()) << y.status();
    const Tensor* bias = layer.bias() != nullptr ? &layer.bias()->value() : nullptr;
    const std::vector<double> want = Reference(x, layer.kernel().value(), bias, options);
    ASSERT_EQ(static_cast<size_t>(y->num_elements()), want.size());
    EXPECT_EQ(y->dim(3), 3 * options.depth_multiplier);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(y->data<float>()[i], want[i], 1e-5) << i;
  }
}

TEST(DepthwiseConv2DTest, FiniteDifferences) {
  DepthwiseConv2D layer(3, {.strides = 2,
                            .padding = ops::Padding::kSame,
                            .depth_multiplier = 2,
                            .seed = 5,
                            .activation = Activation::kTanh});
  ASSERT_TRUE(layer.Build(Shape{1, 5, 5, 3}).ok());
  ASSERT_TRUE(layer.bias()->Assign(RandomTensor({6}, 23)).ok());
  EXPECT_EQ(CheckModuleGradients(layer, RandomTensor({2, 5, 5, 3}, 24), true), "");
  DepthwiseConv2D dilated({2, 3}, {.dilation_rate = {2, 1}, .use_bias = false});
  EXPECT_EQ(CheckModuleGradients(dilated, RandomTensor({1, 6, 5, 2}, 25), true), "");
}

TEST(DepthwiseConv2DTest, ConfigMakesTheSameLayer) {
  DepthwiseConv2D layer({3, 2}, {.strides = {2, 1},
                                 .padding = ops::Padding::kSame,
                                 .depth_multiplier = 2,
                                 .dilation_rate = {1, 2},
                                 .kernel_initializer = Initializer::kHeNormal,
                                 .seed = 7,
                                 .activation = Activation::kRelu,
                                 .kernel_regularizer = Regularizer::L2(0.01f)});
  ASSERT_TRUE(layer.Build(Shape{1, 9, 9, 4}).ok());
  absl::StatusOr<LayerConfig> config = layer.GetConfig();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->class_name, "DepthwiseConv2D");
  absl::StatusOr<std::unique_ptr<Module>> made = LayerFromConfig(*config);
  ASSERT_TRUE(made.ok()) << made.status();
  ASSERT_TRUE((*made)->Build(Shape{1, 9, 9, 4}).ok());
  absl::StatusOr<LayerConfig> again = (*made)->GetConfig();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ints, config->ints);
  EXPECT_EQ(again->floats, config->floats);
  EXPECT_EQ(again->strings, config->strings);
  // The same seed: the same weights, the same outputs.
  const Tensor x = RandomTensor({2, 9, 9, 4}, 26);
  EXPECT_EQ(Values(*layer.Forward(x, false)), Values(*(*made)->Forward(x, false)));
  absl::StatusOr<LayerSize> size = LayerSizeFromConfig(*config, Shape{2, 9, 9, 4});
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(size->parameters, 3 * 2 * 4 * 2 + 8);
  EXPECT_EQ(size->output_shape, Shape({2, 5, 9, 8}));
}

TEST(DepthwiseConv2DTest, ErrorsNameTheLayerAndTheValue) {
  DepthwiseConv2D zero(3, {.depth_multiplier = 0});
  absl::Status built = zero.Build(Shape{1, 5, 5, 2});
  EXPECT_TRUE(absl::IsInvalidArgument(built));
  EXPECT_THAT(built.message(), HasSubstr("depthwise_conv2d: depth_multiplier 0"));
  DepthwiseConv2D layer(3);
  ASSERT_TRUE(layer.Build(Shape{1, 5, 5, 2}).ok());
  EXPECT_THAT(layer.Forward(RandomTensor({1, 5, 5, 3}, 27), false).status().message(),
              HasSubstr("built for 2 input channels"));
  EXPECT_THAT(DepthwiseConv2D(3).Forward(RandomTensor({5, 5, 3}, 28), false).status().message(),
              HasSubstr("expects NHWC inputs"));
  LayerConfig bad{.class_name = "DepthwiseConv2D",
                  .ints = {{"kernel_h", 3},
                           {"kernel_w", 3},
                           {"stride_h", 1},
                           {"stride_w", 1},
                           {"depth_multiplier", -1}},
                  .strings = {{"padding", "valid"}}};
  EXPECT_THAT(LayerFromConfig(bad).status().message(), HasSubstr("depth_multiplier -1"));
}

}  // namespace
}  // namespace sluice::train::layers
