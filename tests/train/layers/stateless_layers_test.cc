// The layers without trainable variables (train/stateless_layers.h): ReLU,
// MaxPool, AvgPool, GlobalAvgPool, Flatten and Dropout, whose masks resume
// exactly from its saved call count.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "tests/train/gradient_check.h"
#include "tests/train/module_gradient_check.h"
#include "train/layers/avg_pool.h"
#include "train/layers/dropout.h"
#include "train/layers/flatten.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/layer_config.h"
#include "train/layers/max_pool.h"
#include "train/layers/relu.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::CheckModuleGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::Pointwise;

TEST(StatelessLayersTest, Forward) {
  EXPECT_THAT(Values(*ReLU().Forward(T({-1, 2}, {2}), true)), ElementsAre(0, 2));
  EXPECT_EQ(Flatten().Forward(T({1, 2, 3, 4}, {1, 2, 2}), true)->shape(), Shape({1, 4}));
  EXPECT_THAT(Values(*MaxPool().Forward(T({1, 4, 3, 2}, {1, 2, 2, 1}), true)), ElementsAre(4));
  EXPECT_THAT(Values(*AvgPool().Forward(T({1, 4, 3, 2}, {1, 2, 2, 1}), true)), ElementsAre(2.5f));
}

TEST(StatelessLayersTest, AvgPoolSameIgnoresPadding) {
  // A 3x1 column pooled 2x1, stride 2, same padding: windows {1, 2} and {3, pad}.
  AvgPool pool(
      {.window_h = 2, .window_w = 1, .stride_h = 2, .stride_w = 1, .padding = ops::Padding::kSame});
  EXPECT_THAT(Values(*pool.Forward(T({1, 2, 3}, {1, 3, 1, 1}), false)), ElementsAre(1.5f, 3));
}

TEST(StatelessLayersTest, GlobalAvgPoolAveragesHeightAndWidth) {
  // [1, 2, 2, 2]: channel 0 holds 1, 2, 3, 4, channel 1 holds 10, 20, 30, 40.
  Tensor x = T({1, 10, 2, 20, 3, 30, 4, 40}, {1, 2, 2, 2});
  Tensor y = *GlobalAvgPool().Forward(x, true);
  EXPECT_EQ(y.shape(), Shape({1, 2}));
  EXPECT_THAT(Values(y), Pointwise(FloatEq(), {2.5f, 25.0f}));
  EXPECT_FALSE(GlobalAvgPool().Forward(T({1, 2}, {2}), true).ok());
}

TEST(StatelessLayersTest, FiniteDifferences) {
  // Distinct values 2/96 apart in a fixed shuffled order, none within 0.01 of 0: every
  // finite-difference step (1e-3) stays clear of ReLU's kink and of max-pool ties, where a
  // difference would straddle a corner.
  Tensor x(DType::kFloat32, Shape{2, 4, 4, 3});
  std::vector<float> values(x.num_elements());
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = -1.0f + (static_cast<float>(i) + 0.5f) * 2.0f / static_cast<float>(values.size());
  }
  std::shuffle(values.begin(), values.end(), std::mt19937(12));
  std::copy(values.begin(), values.end(), x.data<float>());
  ReLU relu;
  AvgPool avg(
      {.window_h = 3, .window_w = 3, .stride_h = 2, .stride_w = 2, .padding = ops::Padding::kSame});
  MaxPool max;
  GlobalAvgPool global;
  Flatten flatten;
  EXPECT_EQ(CheckModuleGradients(relu, x, true), "");
  EXPECT_EQ(CheckModuleGradients(avg, x, true), "");
  EXPECT_EQ(CheckModuleGradients(max, x, true), "");
  EXPECT_EQ(CheckModuleGradients(global, x, true), "");
  EXPECT_EQ(CheckModuleGradients(flatten, x, true), "");
}

TEST(DropoutLayerTest, OnlyWhileTraining) {
  Tensor x = RandomTensor({100}, 5, 1, 2);
  Dropout dropout(0.5f, 9);
  Tensor a = *dropout.Forward(x, true);
  Tensor b = *dropout.Forward(x, true);
  EXPECT_FALSE(a.Equals(x));
  EXPECT_FALSE(a.Equals(b));  // a new mask each step
  EXPECT_EQ(dropout.calls(), 2);
  EXPECT_TRUE(dropout.Forward(x, false)->Equals(x));
  EXPECT_EQ(dropout.calls(), 2);  // inference draws no mask
}

// Keras refuses a rate outside [0, 1) when the layer is made; a constructor cannot, so Forward
// does at inference too (an evaluated or exported model never checked it), and so do the config
// loader and sizer. Rate 0 is the input itself, drawing no mask.
TEST(DropoutLayerTest, ARateOutsideZeroToOneIsAnErrorAndZeroIsTheInput) {
  const Tensor x = RandomTensor({8}, 5, 1, 2);
  for (float rate : {1.0f, 1.5f, -0.1f, std::nanf("")}) {
    Dropout dropout(rate);
    EXPECT_EQ(dropout.Forward(x, false).status().code(), absl::StatusCode::kInvalidArgument)
        << rate;
    const LayerConfig config{.class_name = "Dropout", .floats = {{"rate", rate}}};
    EXPECT_FALSE(LayerFromConfig(config).ok()) << rate;
    EXPECT_FALSE(LayerSizeFromConfig(config, Shape{2, 8}).ok()) << rate;
  }
  Dropout none(0.0f);
  absl::StatusOr<Tensor> y = none.Forward(x, true);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->raw_data(), x.raw_data());
  EXPECT_EQ(none.calls(), 0);
}

TEST(DropoutLayerTest, CallCountIsANonTrainableVariable) {
  Dropout dropout(0.5f);
  EXPECT_TRUE(dropout.TrainableVariables().empty());
  ASSERT_EQ(dropout.Variables().size(), 1u);
  EXPECT_FALSE(dropout.Variables()[0]->trainable());
  EXPECT_EQ(dropout.Variables()[0]->name(), "dropout/calls");
}

TEST(DropoutLayerTest, RestoredCountResumesTheMasks) {
  Tensor x = RandomTensor({64}, 5, 1, 2);
  Dropout uninterrupted(0.3f, 21);
  std::vector<Tensor> expected;
  for (int i = 0; i < 5; ++i) expected.push_back(*uninterrupted.Forward(x, true));

  Dropout first(0.3f, 21);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(first.Forward(x, true)->Equals(expected[i]));
  Tensor saved = first.Variables()[0]->value().Clone();  // what a checkpoint keeps
  Dropout resumed(0.3f, 21);
  ASSERT_TRUE(resumed.Variables()[0]->Assign(saved).ok());
  EXPECT_TRUE(resumed.Forward(x, true)->Equals(expected[3]));
  EXPECT_TRUE(resumed.Forward(x, true)->Equals(expected[4]));
}

TEST(DropoutLayerTest, SeedsDoNotShareMasksAStepApart) {
  // With seed + count, layer seeds 0 and 1 would repeat each other's masks.
  Tensor x = RandomTensor({64}, 5, 1, 2);
  Dropout a(0.5f, 0), b(0.5f, 1);
  ASSERT_TRUE(a.Forward(x, true).ok());
  EXPECT_FALSE(a.Forward(x, true)->Equals(*b.Forward(x, true)));
}

TEST(DropoutLayerTest, RefusesPastExactFloatCount) {
  Dropout dropout(0.5f);
  ASSERT_TRUE(dropout.Variables()[0]->Assign(Tensor::Scalar<float>(16777216.0f)).ok());
  EXPECT_EQ(dropout.Forward(T({1}, {1}), true).status().code(), absl::StatusCode::kOutOfRange);
}

// Keras' MaxPooling2D(pool_size, strides = pool_size, padding) and AveragePooling2D.
TEST(StatelessLayersTest, PoolingTakesKerasPoolSizeStridesAndPadding) {
  const ops::Pool2DOptions two = MaxPool2D(2).options();
  EXPECT_EQ(std::vector<int64_t>({two.window_h, two.window_w, two.stride_h, two.stride_w}),
            std::vector<int64_t>({2, 2, 2, 2}));
  const ops::Pool2DOptions tall = AveragePooling2D(PoolSize(3, 1)).options();
  EXPECT_EQ(std::vector<int64_t>({tall.window_h, tall.window_w, tall.stride_h, tall.stride_w}),
            std::vector<int64_t>({3, 1, 3, 1}));
  // 3x3 windows moving by 1 with "same" padding: the 3x3 input keeps its size, and each
  // output is the largest value its window covers.
  MaxPool2D same(3, 1, ops::Padding::kSame);
  EXPECT_EQ(same.options().padding, ops::Padding::kSame);
  absl::StatusOr<Tensor> y = same.Forward(T({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1}), false);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(5, 6, 6, 8, 9, 9, 8, 9, 9));
}

}  // namespace
}  // namespace sluice::train::layers
