// ReLU (train/layers/relu.h) with Keras' max_value, negative_slope and threshold: values by hand
// from Keras' definition, finite differences away from the kinks, configs and errors.
#include "train/layers/relu.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "tests/train/gradient_check.h"
#include "tests/train/module_gradient_check.h"
#include "train/layers/layer_config.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::CheckModuleGradients;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::HasSubstr;
using ::testing::Pointwise;

const Tensor kX = T({-3, -1, -0.25f, 0, 0.25f, 0.5f, 1, 5, 6, 7.5f}, {10});

std::vector<float> Apply(ReLUOptions options) {
  absl::StatusOr<Tensor> y = ReLU(options).Forward(kX, false);
  EXPECT_TRUE(y.ok()) << y.status();
  return y.ok() ? Values(*y) : std::vector<float>{};
}

// keras.layers.ReLU: max_value for x >= max_value, x for threshold <= x < max_value,
// negative_slope * (x - threshold) otherwise.
TEST(ReLULayerTest, KerasDefinitionByHand) {
  EXPECT_THAT(Apply({}), ElementsAre(0, 0, 0, 0, 0.25f, 0.5f, 1, 5, 6, 7.5f));
  // ReLU6.
  EXPECT_THAT(Apply({.max_value = 6}), ElementsAre(0, 0, 0, 0, 0.25f, 0.5f, 1, 5, 6, 6));
  EXPECT_THAT(Apply({.max_value = 0.5f}),
              ElementsAre(0, 0, 0, 0, 0.25f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f));
  // Leaky.
  EXPECT_THAT(Apply({.negative_slope = 0.1f}),
              Pointwise(FloatEq(),
                        std::vector<float>{-0.3f, -0.1f, -0.025f, 0, 0.25f, 0.5f, 1, 5, 6, 7.5f}));
  // A threshold: x above 0.5 only, and below it the slope times (x - 0.5).
  EXPECT_THAT(Apply({.threshold = 0.5f}), ElementsAre(0, 0, 0, 0, 0, 0, 1, 5, 6, 7.5f));
  EXPECT_THAT(Apply({.max_value = 6, .negative_slope = 0.5f, .threshold = 1}),
              Pointwise(FloatEq(),
                        std::vector<float>{-2, -1, -0.625f, -0.5f, -0.375f, -0.25f, 0, 5, 6, 6}));
}

TEST(ReLULayerTest, FiniteDifferencesAwayFromTheKinks) {
  // Values spread over [-8, 8], none within 0.01 of 0, 1, 6 or the threshold 0.5.
  Tensor x(DType::kFloat32, Shape{2, 3, 4, 5});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-8, 8);
  for (float& v : x.flat<float>()) {
    do {
      v = u(rng);
    } while (std::min({std::abs(v), std::abs(v - 1), std::abs(v - 6), std::abs(v - 0.5f)}) < 0.01f);
  }
  for (const ReLUOptions& options :
       {ReLUOptions{}, ReLUOptions{.max_value = 6}, ReLUOptions{.negative_slope = 0.2f},
        ReLUOptions{.max_value = 6, .negative_slope = 0.3f, .threshold = 0.5f},
        ReLUOptions{.threshold = 1}}) {
    ReLU relu(options);
    EXPECT_EQ(CheckModuleGradients(relu, x, true), "")
        << options.max_value.value_or(-1) << " " << options.negative_slope << " "
        << options.threshold;
  }
}

TEST(ReLULayerTest, ConfigKeepsTheOptionsAndAPlainReLUsStaysEmpty) {
  EXPECT_TRUE(ReLU().GetConfig()->floats.empty());
  ReLU relu({.max_value = 6, .negative_slope = 0.25f, .threshold = 0.5f});
  absl::StatusOr<LayerConfig> config = relu.GetConfig();
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->floats.at("max_value"), 6);
  absl::StatusOr<std::unique_ptr<Module>> made = LayerFromConfig(*config);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(Values(*(*made)->Forward(kX, false)), Values(*relu.Forward(kX, false)));
  // A config of the old form (no floats) is a plain ReLU.
  made = LayerFromConfig({.class_name = "ReLU"});
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(Values(*(*made)->Forward(kX, false)), Apply({}));
}

TEST(ReLULayerTest, NegativeArgumentsAreRefusedAsKerasRefusesThem) {
  absl::Status s = ReLU({.max_value = -1}).Forward(kX, false).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("ReLU: max_value (-1)"));
  EXPECT_FALSE(ReLU({.negative_slope = -0.1f}).Forward(kX, false).ok());
  EXPECT_FALSE(ReLU({.threshold = -2}).Forward(kX, false).ok());
  EXPECT_FALSE(LayerFromConfig({.class_name = "ReLU", .floats = {{"threshold", -1}}}).ok());
}

}  // namespace
}  // namespace sluice::train::layers
