// AdamW (train/adamw.h): Keras' defaults and a step computed by hand.
#include "train/optimizers/adamw.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"

namespace sluice::train::optimizers {
namespace {

using ::sluice::train::testing::T;

TEST(AdamWTest, MatchesKerasSteps) {
  // lr 0.001, weight decay 0.004: w = 1 - 0.001 * 0.004 * 1 = 0.999996, then
  // Adam's step on g = 0.5 (0.0009999937): 0.9989960063. Then with g = -1:
  // 0.9993581128 (float64). Plain Adam gives 0.9990000063, 0.9993661088.
  AdamW adamw;
  EXPECT_FLOAT_EQ(adamw.learning_rate(), 0.001f);
  autodiff::Variable w(T({1}, {1}));
  ASSERT_TRUE(adamw.Apply({T({0.5f}, {1})}, {&w}).ok());
  EXPECT_NEAR(w.value().data<float>()[0], 0.9989960063, 2e-7);
  ASSERT_TRUE(adamw.Apply({T({-1}, {1})}, {&w}).ok());
  EXPECT_NEAR(w.value().data<float>()[0], 0.9993581128, 2e-7);
}

TEST(AdamWTest, DecayIsDecoupledFromTheGradient) {
  // With a zero gradient Adam's step is 0 (m = 0), so only the decay moves w:
  // w * (1 - lr * wd) each step, whatever the size of w.
  AdamW adamw({.learning_rate = 0.1f, .weight_decay = 0.5f});
  autodiff::Variable w(T({2, -4}, {2}));
  ASSERT_TRUE(adamw.Apply({T({0, 0}, {2})}, {&w}).ok());
  EXPECT_FLOAT_EQ(w.value().data<float>()[0], 2 * 0.95f);
  EXPECT_FLOAT_EQ(w.value().data<float>()[1], -4 * 0.95f);
}

TEST(AdamWTest, ExcludedVariablesAreNotDecayed) {
  // Zero gradients: a decayed variable shrinks by (1 - 0.1 * 0.5), an excluded one keeps
  // its value. Names match by substring, as Keras' var_names.
  AdamW adamw({.learning_rate = 0.1f, .weight_decay = 0.5f});
  adamw.ExcludeFromWeightDecay({"bias", "batch_norm"});
  autodiff::Variable kernel(T({2}, {1}), "dense/kernel");
  autodiff::Variable bias(T({2}, {1}), "dense/bias");
  autodiff::Variable gamma(T({2}, {1}), "block/batch_norm/gamma");
  ASSERT_TRUE(adamw.Apply({T({0}, {1}), T({0}, {1}), T({0}, {1})}, {&kernel, &bias, &gamma}).ok());
  EXPECT_FLOAT_EQ(kernel.value().data<float>()[0], 2 * 0.95f);
  EXPECT_FLOAT_EQ(bias.value().data<float>()[0], 2);
  EXPECT_FLOAT_EQ(gamma.value().data<float>()[0], 2);
  // A new list replaces the old one.
  adamw.ExcludeFromWeightDecay({});
  ASSERT_TRUE(adamw.Apply({T({0}, {1})}, {&bias}).ok());
  EXPECT_FLOAT_EQ(bias.value().data<float>()[0], 2 * 0.95f);
}

}  // namespace
}  // namespace sluice::train::optimizers
