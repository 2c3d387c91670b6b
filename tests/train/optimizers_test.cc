// Sgd and Adam (train/sgd.h, train/adam.h) against steps computed by hand
// from Keras' update rules; the shared Optimizer::Apply checks too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"
#include "train/adam.h"
#include "train/sgd.h"

namespace sluice::train {
namespace {

using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;

// Two steps on w = [1, 2] with gradients [0.5, -1] each time.
std::vector<float> TwoSteps(Optimizer& opt) {
  Variable w(T({1, 2}, {2}));
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
  Variable w(T({1, 2}, {2}));
  ASSERT_TRUE(sgd.Apply({T({0.5f, -1}, {2})}, {&w}).ok());
  EXPECT_THAT(Values(w.value()), Pointwise(FloatNear(1e-6), {0.9f, 2.0f}));
}

TEST(AdamTest, MatchesKerasSteps) {
  // Keras defaults; w = 1 with g = 0.5 then g = -1 (see the formula in adam.h),
  // computed in float64: 0.9990000063, then 0.9993661088.
  Adam adam;
  Variable w(T({1}, {1}));
  ASSERT_TRUE(adam.Apply({T({0.5f}, {1})}, {&w}).ok());
  EXPECT_NEAR(w.value().data<float>()[0], 0.9990000063, 2e-7);
  ASSERT_TRUE(adam.Apply({T({-1}, {1})}, {&w}).ok());
  EXPECT_NEAR(w.value().data<float>()[0], 0.9993661088, 2e-7);
}

TEST(OptimizerTest, MissingGradientLeavesVariableAndMismatchIsError) {
  Sgd sgd({.learning_rate = 1});
  Variable a(T({1}, {1})), b(T({5}, {1}));
  ASSERT_TRUE(sgd.Apply({std::nullopt, T({1}, {1})}, {&a, &b}).ok());
  EXPECT_THAT(Values(a.value()), ElementsAre(1));
  EXPECT_THAT(Values(b.value()), ElementsAre(4));
  EXPECT_FALSE(sgd.Apply({T({1, 2}, {2})}, {&a}).ok());
  EXPECT_FALSE(sgd.Apply({}, {&a}).ok());
}

}  // namespace
}  // namespace sluice::train
