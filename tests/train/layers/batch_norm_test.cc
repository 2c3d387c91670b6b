// BatchNorm (train/batch_norm_layer.h): training normalises with the batch
// and moves the moving statistics; inference uses them and changes nothing;
// finite differences in both modes.
#include "train/layers/batch_norm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"
#include "tests/train/module_gradient_check.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::CheckModuleGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;

TEST(BatchNormLayerTest, VariablesAndDefaults) {
  BatchNorm bn(2);
  auto vars = bn.Variables();
  ASSERT_EQ(vars.size(), 4u);
  EXPECT_EQ(vars[0]->name(), "batch_norm/gamma");
  EXPECT_EQ(vars[1]->name(), "batch_norm/beta");
  EXPECT_EQ(vars[2]->name(), "batch_norm/moving_mean");
  EXPECT_EQ(vars[3]->name(), "batch_norm/moving_variance");
  EXPECT_TRUE(vars[0]->trainable() && vars[1]->trainable());
  EXPECT_FALSE(vars[2]->trainable() || vars[3]->trainable());
  EXPECT_EQ(bn.TrainableVariables(),
            std::vector<autodiff::Variable*>(vars.begin(), vars.begin() + 2));
  EXPECT_THAT(Values(bn.gamma().value()), ElementsAre(1, 1));
  EXPECT_THAT(Values(bn.beta().value()), ElementsAre(0, 0));
  EXPECT_THAT(Values(bn.moving_mean().value()), ElementsAre(0, 0));
  EXPECT_THAT(Values(bn.moving_variance().value()), ElementsAre(1, 1));
}

TEST(BatchNormLayerTest, TrainingUsesBatchStatsAndMovesTheMovingOnes) {
  BatchNorm bn(2);
  ASSERT_TRUE(bn.gamma().Assign(T({2, 1}, {2})).ok());
  ASSERT_TRUE(bn.beta().Assign(T({0, 0.5f}, {2})).ok());
  // Channel 0: 1, 2, 3, 4 (mean 2.5, variance 1.25); channel 1: 0, 0, 0, 4
  // (mean 1, variance 3).
  Tensor x = T({1, 0, 2, 0, 3, 0, 4, 4}, {4, 2});
  Tensor y = *bn.Forward(x, /*training=*/true);
  // gamma (x - mean) / sqrt(variance + 1e-3) + beta
  EXPECT_THAT(Values(y),
              Pointwise(FloatNear(1e-5), {-2.6822089f, -0.0772541f, -0.8940696f, -0.0772541f,
                                          0.8940696f, -0.0772541f, 2.6822089f, 2.2317622f}));
  // moving = 0.99 moving + 0.01 batch, with the biased variance.
  EXPECT_THAT(Values(bn.moving_mean().value()), Pointwise(FloatNear(1e-7), {0.025f, 0.01f}));
  EXPECT_THAT(Values(bn.moving_variance().value()), Pointwise(FloatNear(1e-6), {1.0025f, 1.02f}));
  ASSERT_TRUE(bn.Forward(x, true).ok());
  // 0.99 * 0.025 + 0.01 * 2.5
  EXPECT_THAT(Values(bn.moving_mean().value()), Pointwise(FloatNear(1e-6), {0.04975f, 0.0199f}));
}

TEST(BatchNormLayerTest, InferenceUsesTheMovingStatsAndKeepsThem) {
  BatchNorm bn(2, {.momentum = 0.9f});
  ASSERT_TRUE(bn.gamma().Assign(T({2, 1}, {2})).ok());
  ASSERT_TRUE(bn.beta().Assign(T({0, 0.5f}, {2})).ok());
  ASSERT_TRUE(bn.moving_mean().Assign(T({1, -1}, {2})).ok());
  ASSERT_TRUE(bn.moving_variance().Assign(T({4, 0.25f}, {2})).ok());
  // One row: the batch's own statistics would give zeros.
  Tensor y = *bn.Forward(T({3, 0}, {1, 2}), /*training=*/false);
  EXPECT_THAT(Values(y), Pointwise(FloatNear(1e-5), {1.99975f, 2.4960120f}));
  EXPECT_THAT(Values(bn.moving_mean().value()), ElementsAre(1, -1));
  EXPECT_THAT(Values(bn.moving_variance().value()), ElementsAre(4, 0.25f));
}

TEST(BatchNormLayerTest, MomentumOption) {
  BatchNorm bn(1, {.momentum = 0.5f});
  ASSERT_TRUE(bn.Forward(T({2, 4}, {2, 1}), true).ok());
  EXPECT_THAT(Values(bn.moving_mean().value()), ElementsAre(1.5f));      // 0.5 * 0 + 0.5 * 3
  EXPECT_THAT(Values(bn.moving_variance().value()), ElementsAre(1.0f));  // 0.5 * 1 + 0.5 * 1
}

TEST(BatchNormLayerTest, RejectsWrongChannelCount) {
  BatchNorm bn(3);
  EXPECT_FALSE(bn.Forward(T({1, 2}, {1, 2}), true).ok());
}

TEST(BatchNormLayerTest, FiniteDifferences) {
  BatchNorm bn(3);
  ASSERT_TRUE(bn.gamma().Assign(T({1.5f, -0.5f, 1}, {3})).ok());
  ASSERT_TRUE(bn.beta().Assign(T({0.1f, 0.2f, -0.3f}, {3})).ok());
  ASSERT_TRUE(bn.moving_mean().Assign(T({0.2f, -0.1f, 0}, {3})).ok());
  ASSERT_TRUE(bn.moving_variance().Assign(T({0.5f, 2, 1}, {3})).ok());
  Tensor x = RandomTensor({2, 3, 2, 3}, 17);
  EXPECT_EQ(CheckModuleGradients(bn, x, /*training=*/false), "");
  EXPECT_EQ(CheckModuleGradients(bn, x, /*training=*/true), "");
}

}  // namespace
}  // namespace sluice::train::layers
