#include "train/recipes/schedule.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::train::recipes {
namespace {

using ::testing::HasSubstr;

TEST(ScheduleRecipeTest, ConstantWithoutWarmupIsTheOptimizersOwnRate) {
  absl::StatusOr<std::shared_ptr<const optimizers::LearningRateSchedule>> schedule =
      MakeSchedule({}, 0.1f);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_EQ(*schedule, nullptr);
}

TEST(ScheduleRecipeTest, CosineDecaysToZeroAtTheLastStep) {
  auto schedule = MakeSchedule({.name = "cosine", .total_steps = 100}, 0.1f);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_FLOAT_EQ((**schedule)(0), 0.1f);
  EXPECT_FLOAT_EQ((**schedule)(50), 0.05f);
  EXPECT_NEAR((**schedule)(100), 0, 1e-9);
}

TEST(ScheduleRecipeTest, StepDividesByTenAtHalfAndByAHundredAtThreeQuarters) {
  auto schedule = MakeSchedule({.name = "step", .total_steps = 100}, 1.0f);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_FLOAT_EQ((**schedule)(50), 1.0f);
  EXPECT_FLOAT_EQ((**schedule)(51), 0.1f);
  EXPECT_FLOAT_EQ((**schedule)(75), 0.1f);
  EXPECT_FLOAT_EQ((**schedule)(76), 0.01f);
}

// The warmup comes before the decay's steps: cosine over the 90 steps after 10 of warmup.
TEST(ScheduleRecipeTest, WarmupRisesLinearlyFromZero) {
  auto constant = MakeSchedule({.warmup_steps = 10}, 0.2f);
  ASSERT_TRUE(constant.ok()) << constant.status();
  ASSERT_NE(*constant, nullptr);
  EXPECT_FLOAT_EQ((**constant)(0), 0);
  EXPECT_FLOAT_EQ((**constant)(5), 0.1f);
  EXPECT_FLOAT_EQ((**constant)(10), 0.2f);
  EXPECT_FLOAT_EQ((**constant)(1000), 0.2f);
  auto cosine = MakeSchedule({.name = "cosine", .total_steps = 100, .warmup_steps = 10}, 0.2f);
  ASSERT_TRUE(cosine.ok()) << cosine.status();
  EXPECT_FLOAT_EQ((**cosine)(10), 0.2f);
  EXPECT_FLOAT_EQ((**cosine)(55), 0.1f);
  EXPECT_NEAR((**cosine)(100), 0, 1e-9);
}

TEST(ScheduleRecipeTest, UnknownNamesAreRefused) {
  auto schedule = MakeSchedule({.name = "linear"}, 0.1f);
  EXPECT_TRUE(absl::IsInvalidArgument(schedule.status()));
  EXPECT_THAT(schedule.status().message(),
              HasSubstr("schedule takes constant, cosine or step, not 'linear'"));
  EXPECT_TRUE(absl::IsInvalidArgument(CheckScheduleOptions({.name = "linear"})));
  EXPECT_TRUE(CheckScheduleOptions({.name = "cosine"}).ok());
}

}  // namespace
}  // namespace sluice::train::recipes
