// GradientAccumulator (train/gradient_accumulator.h): sums, means, missing
// gradients, resets and argument checks.
#include "train/optimizers/gradient_accumulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"

namespace sluice::train::optimizers {
namespace {

using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

TEST(GradientAccumulatorTest, AveragesOverSteps) {
  GradientAccumulator acc(2);
  EXPECT_FALSE(acc.ready());
  Tensor g0 = T({1, 2}, {2});
  ASSERT_TRUE(acc.Add({g0, std::nullopt, std::nullopt}).ok());
  EXPECT_FALSE(acc.ready());
  ASSERT_TRUE(acc.Add({T({3, 5}, {2}), T({6}, {1}), std::nullopt}).ok());
  EXPECT_TRUE(acc.ready());
  auto mean = *acc.Average();
  ASSERT_EQ(mean.size(), 3u);
  EXPECT_THAT(Values(*mean[0]), ElementsAre(2, 3.5f));
  EXPECT_THAT(Values(*mean[1]), ElementsAre(3));  // missing once: zero that time
  EXPECT_FALSE(mean[2]);                          // missing every time
  EXPECT_THAT(Values(g0), ElementsAre(1, 2));     // the first gradient was copied, not summed into
  // Average() resets.
  EXPECT_FALSE(acc.ready());
  ASSERT_TRUE(acc.Add({T({4}, {1})}).ok());
  ASSERT_TRUE(acc.Add({T({8}, {1})}).ok());
  EXPECT_THAT(Values(*(*acc.Average())[0]), ElementsAre(6));
}

TEST(GradientAccumulatorTest, RejectsMismatchesAndKeepsTheSums) {
  GradientAccumulator acc(3);
  ASSERT_TRUE(acc.Add({T({1, 1}, {2})}).ok());
  EXPECT_FALSE(acc.Add({T({1, 1}, {2}), T({1}, {1})}).ok());
  EXPECT_FALSE(acc.Add({T({1, 1, 1}, {3})}).ok());
  ASSERT_TRUE(acc.Add({T({2, 5}, {2})}).ok());
  EXPECT_FALSE(acc.ready());
  ASSERT_TRUE(acc.Add({T({3, 0}, {2})}).ok());
  EXPECT_TRUE(acc.ready());
  EXPECT_THAT(Values(*(*acc.Average())[0]), ElementsAre(2, 2));
}

}  // namespace
}  // namespace sluice::train::optimizers
