// Freezing (Module::set_trainable, Keras' layer.trainable = False): no gradients, no updates,
// BatchNorm in inference mode, and lazily built variables frozen too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/layers/batch_norm.h"
#include "train/layers/dense.h"
#include "train/layers/sequential.h"
#include "train/ops/reduce.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::Values;

TEST(FreezingTest, FrozenVariablesAreNotTrainableAndGetNoGradient) {
  Sequential model{Dense(3, 4), Dense(4, 2)};
  model.module(0).set_trainable(false);
  EXPECT_FALSE(model.module(0).trainable());
  EXPECT_TRUE(model.trainable());
  ASSERT_EQ(model.TrainableVariables().size(), 2u);
  EXPECT_EQ(model.TrainableVariables()[0]->name(), "1/dense/kernel");
  EXPECT_EQ(model.NonTrainableVariables().size(), 2u);
  // Variables() keeps its order whatever is frozen: checkpoints match by position.
  EXPECT_EQ(model.Variables()[0]->name(), "0/dense/kernel");

  autodiff::Tape tape;
  Tensor y = *model.Forward(RandomTensor({2, 3}, 1), true);
  Tensor loss = *ops::Sum(y);
  auto& frozen_kernel = static_cast<Dense&>(model.module(0)).kernel();
  auto grads = *tape.Gradient(
      loss, {frozen_kernel.mutable_value(), model.TrainableVariables()[0]->mutable_value()});
  EXPECT_FALSE(grads[0].has_value());  // not watched
  EXPECT_TRUE(grads[1].has_value());

  model.set_trainable(true);
  EXPECT_EQ(model.TrainableVariables().size(), 4u);
}

TEST(FreezingTest, LazyLayersFrozenBeforeBuildingStartFrozen) {
  Sequential model{Dense(4), Dense(2)};
  model.set_trainable(false);
  ASSERT_TRUE(model.Build(Shape{1, 3}).ok());
  EXPECT_EQ(model.Variables().size(), 4u);
  EXPECT_TRUE(model.TrainableVariables().empty());
  EXPECT_FALSE(model.trainable());
}

TEST(FreezingTest, FrozenBatchNormRunsAsInInferenceAndKeepsItsStatistics) {
  BatchNorm bn(2, {.momentum = 0.5f});
  bn.set_trainable(false);
  const Tensor x = RandomTensor({8, 2}, 3, 1, 5);
  Tensor y = *bn.Forward(x, /*training=*/true);
  // Moving statistics untouched: mean 0, variance 1.
  EXPECT_EQ(Values(bn.moving_mean().value()), (std::vector<float>{0, 0}));
  EXPECT_EQ(Values(bn.moving_variance().value()), (std::vector<float>{1, 1}));
  EXPECT_EQ(Values(y), Values(*bn.Forward(x, /*training=*/false)));
  bn.set_trainable(true);
  ASSERT_TRUE(bn.Forward(x, true).ok());
  EXPECT_NE(Values(bn.moving_mean().value()), (std::vector<float>{0, 0}));
  // The moving statistics are never trainable, frozen or not.
  EXPECT_EQ(bn.TrainableVariables().size(), 2u);
}

}  // namespace
}  // namespace sluice::train::layers
