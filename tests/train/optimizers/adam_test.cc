// Adam (train/adam.h) against steps computed by hand from Keras' update rule.
#include "train/optimizers/adam.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"

namespace sluice::train::optimizers {
namespace {

using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::FloatNear;
using ::testing::Pointwise;

TEST(AdamTest, MatchesKerasSteps) {
  // Keras defaults; w = 1 with g = 0.5 then g = -1 (see the formula in adam.h),
  // computed in float64: 0.9990000063, then 0.9993661088.
  Adam adam;
  autodiff::Variable w(T({1}, {1}));
  ASSERT_TRUE(adam.Apply({T({0.5f}, {1})}, {&w}).ok());
  EXPECT_NEAR(w.value().data<float>()[0], 0.9990000063, 2e-7);
  ASSERT_TRUE(adam.Apply({T({-1}, {1})}, {&w}).ok());
  EXPECT_NEAR(w.value().data<float>()[0], 0.9993661088, 2e-7);
}

TEST(AdamTest, SlotsAreFirstAndSecondMoments) {
  // After one step with g = 0.5: m = 0.1 * 0.5, v = 0.001 * 0.25.
  Adam adam;
  autodiff::Variable a(T({1}, {1})), b(T({1}, {1}));
  ASSERT_TRUE(adam.Apply({std::nullopt, T({0.5f}, {1})}, {&a, &b}).ok());
  OptimizerState state = *adam.SaveState({&a, &b});
  EXPECT_EQ(state.iterations, 1);
  EXPECT_FLOAT_EQ(state.learning_rate, 0.001f);
  ASSERT_EQ(state.slots.size(), 2u);  // `a` never had a gradient: no slots yet
  EXPECT_EQ(state.slots[0].first, "m/1");
  EXPECT_EQ(state.slots[1].first, "v/1");
  EXPECT_THAT(Values(state.slots[0].second), Pointwise(FloatNear(1e-7), {0.05f}));
  EXPECT_THAT(Values(state.slots[1].second), Pointwise(FloatNear(1e-8), {0.00025f}));
}

}  // namespace
}  // namespace sluice::train::optimizers
