// Learning-rate schedules (train/lr_schedule.h) against values computed by
// hand from Keras' formulas.
#include "train/optimizers/learning_rate_schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sluice::train::optimizers {
namespace {

TEST(ExponentialDecayTest, SmoothAndStaircase) {
  ExponentialDecay smooth({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5});
  EXPECT_FLOAT_EQ(smooth(0), 0.1f);
  EXPECT_FLOAT_EQ(smooth(5), 0.0707106781f);   // 0.1 * 0.5^0.5
  EXPECT_FLOAT_EQ(smooth(25), 0.0176776695f);  // 0.1 * 0.5^2.5
  auto step = StepDecay(0.1, 10, 0.5);
  EXPECT_FLOAT_EQ((*step)(9), 0.1f);
  EXPECT_FLOAT_EQ((*step)(10), 0.05f);
  EXPECT_FLOAT_EQ((*step)(25), 0.025f);
}

TEST(PiecewiseConstantDecayTest, IntervalsClosedOnTheRight) {
  auto schedule = *PiecewiseConstantDecay::Create({10, 20}, {1.0f, 0.5f, 0.1f});
  EXPECT_FLOAT_EQ((*schedule)(0), 1.0f);
  EXPECT_FLOAT_EQ((*schedule)(10), 1.0f);
  EXPECT_FLOAT_EQ((*schedule)(11), 0.5f);
  EXPECT_FLOAT_EQ((*schedule)(20), 0.5f);
  EXPECT_FLOAT_EQ((*schedule)(21), 0.1f);
  EXPECT_FLOAT_EQ((*schedule)(1000), 0.1f);
}

TEST(PiecewiseConstantDecayTest, RejectsBadArguments) {
  EXPECT_FALSE(PiecewiseConstantDecay::Create({10}, {1.0f}).ok());
  EXPECT_FALSE(PiecewiseConstantDecay::Create({10, 10}, {1.0f, 0.5f, 0.1f}).ok());
}

TEST(CosineDecayTest, MatchesKeras) {
  CosineDecay schedule({.initial_learning_rate = 0.1, .decay_steps = 100, .alpha = 0.1});
  EXPECT_FLOAT_EQ(schedule(0), 0.1f);
  // 0.1 * (0.9 * 0.5 * (1 + cos(pi / 4)) + 0.1)
  EXPECT_FLOAT_EQ(schedule(25), 0.0868198052f);
  EXPECT_FLOAT_EQ(schedule(50), 0.055f);  // 0.1 * (0.9 * 0.5 + 0.1)
  EXPECT_FLOAT_EQ(schedule(100), 0.01f);  // alpha * initial
  EXPECT_FLOAT_EQ(schedule(500), 0.01f);  // and stays there
}

TEST(LinearWarmupTest, KerasCosineDecayWithWarmup) {
  // Keras CosineDecay(initial_learning_rate=0.01, decay_steps=100,
  // warmup_target=0.1, warmup_steps=10): 0.01 + 0.09 * step / 10 for step <
  // 10, then the cosine from 0.1 over 100 steps.
  LinearWarmup schedule(std::make_shared<CosineDecay>(
                            CosineDecayOptions{.initial_learning_rate = 0.1, .decay_steps = 100}),
                        10, 0.01);
  EXPECT_FLOAT_EQ(schedule(0), 0.01f);
  EXPECT_FLOAT_EQ(schedule(5), 0.055f);
  EXPECT_FLOAT_EQ(schedule(10), 0.1f);
  EXPECT_FLOAT_EQ(schedule(60), 0.05f);  // halfway through the decay
  EXPECT_NEAR(schedule(110), 0.0f, 1e-9);
}

TEST(LinearWarmupTest, WrapsAnySchedule) {
  LinearWarmup schedule(StepDecay(1.0, 5, 0.5), 4);  // from 0
  EXPECT_FLOAT_EQ(schedule(1), 0.25f);
  EXPECT_FLOAT_EQ(schedule(4), 1.0f);
  EXPECT_FLOAT_EQ(schedule(9), 0.5f);  // StepDecay at step 5
}

}  // namespace
}  // namespace sluice::train::optimizers
