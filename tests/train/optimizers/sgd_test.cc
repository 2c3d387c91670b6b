// Sgd (train/sgd.h) against steps computed by hand from Keras' update rules.
#include "train/optimizers/sgd.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"

namespace sluice::train::optimizers {
namespace {

using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::FloatNear;
using ::testing::Pointwise;

// Two steps on w = [1, 2] with gradients [0.5, -1] each time.
std::vector<float> TwoSteps(Optimizer& opt) {
  autodiff::Variable w(T({1, 2}, {2}));
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(opt.Apply({T({0.5f, -1}, {2})}, {&w}).ok());
  }
  return Values(w.value());
}

TEST(SgdTest, PlainStep) {
  Sgd sgd({.learning_rate = 0.1f});
  // w - 2 * 0.1 * g
  EXPECT_THAT(TwoSteps(sgd), Pointwise(FloatNear(1e-6), {0.9f, 2.2f}));
  EXPECT_EQ(sgd.iterations(), 2);
}

TEST(SgdTest, Momentum) {
  // v1 = -0.1 g, w1 = w - 0.1 g; v2 = 0.9 v1 - 0.1 g = -0.19 g; w2 = w - 0.29 g.
  Sgd sgd({.learning_rate = 0.1f, .momentum = 0.9f});
  EXPECT_THAT(TwoSteps(sgd), Pointwise(FloatNear(1e-6), {1 - 0.145f, 2 + 0.29f}));
}

TEST(SgdTest, Nesterov) {
  // Step 1: w += 0.9 (-0.1 g) - 0.1 g = -0.19 g. Step 2: v2 = -0.19 g,
  // w += 0.9 (-0.19 g) - 0.1 g = -0.271 g. Total -0.461 g.
  Sgd sgd({.learning_rate = 0.1f, .momentum = 0.9f, .nesterov = true});
  EXPECT_THAT(TwoSteps(sgd), Pointwise(FloatNear(1e-6), {1 - 0.2305f, 2 + 0.461f}));
}

TEST(SgdTest, WeightDecayIsDecoupled) {
  // w = w - 0.1 * 0.5 * w, then w -= 0.1 g: [1 * 0.95 - 0.05, 2 * 0.95 + 0.1].
  Sgd sgd({.learning_rate = 0.1f, .weight_decay = 0.5f});
  autodiff::Variable w(T({1, 2}, {2}));
  ASSERT_TRUE(sgd.Apply({T({0.5f, -1}, {2})}, {&w}).ok());
  EXPECT_THAT(Values(w.value()), Pointwise(FloatNear(1e-6), {0.9f, 2.0f}));
}

TEST(SgdTest, ExcludedVariablesGetOnlyTheGradientStep) {
  // The same step as above for "dense/kernel"; "dense/bias" skips the decay: [1 - 0.05, 2 + 0.1].
  Sgd sgd({.learning_rate = 0.1f, .weight_decay = 0.5f});
  sgd.ExcludeFromWeightDecay({"bias"});
  autodiff::Variable kernel(T({1, 2}, {2}), "dense/kernel");
  autodiff::Variable bias(T({1, 2}, {2}), "dense/bias");
  ASSERT_TRUE(sgd.Apply({T({0.5f, -1}, {2}), T({0.5f, -1}, {2})}, {&kernel, &bias}).ok());
  EXPECT_THAT(Values(kernel.value()), Pointwise(FloatNear(1e-6), {0.9f, 2.0f}));
  EXPECT_THAT(Values(bias.value()), Pointwise(FloatNear(1e-6), {0.95f, 2.1f}));
}

TEST(SgdTest, VelocityIsItsSlot) {
  Sgd sgd({.learning_rate = 0.1f, .momentum = 0.9f});
  autodiff::Variable w(T({1, 2}, {2}));
  ASSERT_TRUE(sgd.Apply({T({0.5f, -1}, {2})}, {&w}).ok());
  OptimizerState state = *sgd.SaveState({&w});
  ASSERT_EQ(state.slots.size(), 1u);
  EXPECT_EQ(state.slots[0].first, "velocity/0");
  EXPECT_THAT(Values(state.slots[0].second), Pointwise(FloatNear(1e-7), {-0.05f, 0.1f}));
  // Without momentum there is nothing to save.
  Sgd plain;
  ASSERT_TRUE(plain.Apply({T({0.5f, -1}, {2})}, {&w}).ok());
  EXPECT_TRUE(plain.SaveState({&w})->slots.empty());
}

}  // namespace
}  // namespace sluice::train::optimizers
