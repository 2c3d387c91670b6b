// ResidualBlock (train/residual_block.h): structure and names, the identity
// and projection shortcuts by hand, and finite differences.
#include "train/layers/residual_block.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"
#include "tests/train/module_gradient_check.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::CheckModuleGradients;
using ::sluice::train::testing::Names;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;

autodiff::Variable* Find(ResidualBlock& block, const std::string& name) {
  for (autodiff::Variable* v : block.Variables()) {
    if (v->name() == name) return v;
  }
  return nullptr;
}

void Zero(autodiff::Variable* v) {
  ASSERT_TRUE(v->Assign(Tensor::Zeros(DType::kFloat32, v->shape())).ok());
}

TEST(ResidualBlockTest, IdentityBlockVariables) {
  ResidualBlock block(4, 4);
  EXPECT_FALSE(block.has_projection());
  EXPECT_THAT(Names(block.Variables()),
              ElementsAre("conv1/conv2d/kernel", "bn1/batch_norm/gamma", "bn1/batch_norm/beta",
                          "conv2/conv2d/kernel", "bn2/batch_norm/gamma", "bn2/batch_norm/beta",
                          "bn1/batch_norm/moving_mean", "bn1/batch_norm/moving_variance",
                          "bn2/batch_norm/moving_mean", "bn2/batch_norm/moving_variance"));
  EXPECT_EQ(block.TrainableVariables().size(), 6u);
  EXPECT_EQ(block.Variables()[0]->shape(), Shape({3, 3, 4, 4}));
}

TEST(ResidualBlockTest, ProjectionWhenStrideOrChannelsChange) {
  EXPECT_TRUE(ResidualBlock(4, 8).has_projection());
  EXPECT_TRUE(ResidualBlock(4, 4, {.stride = 2}).has_projection());
  ResidualBlock block(4, 8, {.stride = 2});
  EXPECT_EQ(block.TrainableVariables().size(), 9u);
  EXPECT_EQ(block.Variables().size(), 15u);
  EXPECT_NE(Find(block, "shortcut_conv/conv2d/kernel"), nullptr);
  EXPECT_EQ(Find(block, "shortcut_conv/conv2d/kernel")->shape(), Shape({1, 1, 4, 8}));
  // "same" padding with stride 2: ceil(5 / 2) = 3.
  Tensor y = *block.Forward(RandomTensor({2, 5, 5, 4}, 1), true);
  EXPECT_EQ(y.shape(), Shape({2, 3, 3, 8}));
}

TEST(ResidualBlockTest, IdentityShortcutThenRelu) {
  // With zero convolutions the residual branch is bn2's beta, so the block is
  // relu(x + beta2), in training and in inference.
  ResidualBlock block(2, 2);
  Zero(Find(block, "conv1/conv2d/kernel"));
  Zero(Find(block, "conv2/conv2d/kernel"));
  ASSERT_TRUE(Find(block, "bn2/batch_norm/beta")->Assign(T({0.5f, -0.25f}, {2})).ok());
  Tensor x = T({-1, 1, 0.25f, -0.5f, 2, 0, -0.75f, 0.1f}, {1, 2, 2, 2});
  for (bool training : {true, false}) {
    Tensor y = *block.Forward(x, training);
    EXPECT_THAT(Values(y),
                Pointwise(FloatNear(1e-6), {0.0f, 0.75f, 0.75f, 0.0f, 2.5f, 0.0f, 0.0f, 0.0f}))
        << training;
  }
}

TEST(ResidualBlockTest, ProjectionShortcut) {
  // Zero residual convolutions; the 1x1 stride-2 projection maps channel c to
  // 2 * c; inference batch norm with the initial moving statistics divides it
  // by sqrt(1 + 1e-3). Output: relu(2 x[::2, ::2] / sqrt(1.001)).
  ResidualBlock block(1, 1, {.stride = 2});
  Zero(Find(block, "conv1/conv2d/kernel"));
  Zero(Find(block, "conv2/conv2d/kernel"));
  ASSERT_TRUE(Find(block, "shortcut_conv/conv2d/kernel")->Assign(T({2}, {1, 1, 1, 1})).ok());
  Tensor x = T({1, 9, -2, 9, 9, 9, 3, 9, -4}, {1, 3, 3, 1});
  Tensor y = *block.Forward(x, false);
  EXPECT_EQ(y.shape(), Shape({1, 2, 2, 1}));
  const float s = 2 / std::sqrt(1.001f);
  EXPECT_THAT(Values(y), Pointwise(FloatNear(1e-5), {s, 0.0f, 3 * s, 0.0f}));
}

TEST(ResidualBlockTest, FiniteDifferencesIdentity) {
  ResidualBlock block(2, 2, {.seed = 5});
  Tensor x = RandomTensor({2, 3, 3, 2}, 9);
  EXPECT_EQ(CheckModuleGradients(block, x, /*training=*/false), "");
  EXPECT_EQ(CheckModuleGradients(block, x, /*training=*/true), "");
}

TEST(ResidualBlockTest, FiniteDifferencesProjection) {
  ResidualBlock block(2, 3, {.stride = 2, .seed = 7});
  Tensor x = RandomTensor({2, 4, 4, 2}, 10);
  EXPECT_EQ(CheckModuleGradients(block, x, /*training=*/false), "");
  EXPECT_EQ(CheckModuleGradients(block, x, /*training=*/true), "");
}

}  // namespace
}  // namespace sluice::train::layers
