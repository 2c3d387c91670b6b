#include "ops/normalization.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ops/augmentation_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Floats;
using ::sluice::testing::Values;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;

TEST(NormalizationTest, PerChannelHandChecked) {
  auto norm = Normalization::Create({1, 10}, {4, 25});
  ASSERT_TRUE(norm.ok());
  auto out = norm->Apply(Floats({3, 20, -1, 5}, Shape{2, 2}));
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Values(*out), ElementsAre(1, 2, -1, -1));
  auto inverse = Normalization::Create({1, 10}, {4, 25}, /*invert=*/true);
  ASSERT_TRUE(inverse.ok());
  auto back = inverse->Apply(*out);
  ASSERT_TRUE(back.ok());
  EXPECT_THAT(Values(*back), ElementsAre(3, 20, -1, 5));
  // Zero variance divides by epsilon instead of 0.
  auto flat = Normalization::Create({0}, {0});
  ASSERT_TRUE(flat.ok());
  auto tiny = flat->Apply(Floats({1e-7f}, Shape{1}));
  ASSERT_TRUE(tiny.ok());
  EXPECT_FLOAT_EQ(Values(*tiny)[0], 1.0f);
}

TEST(NormalizationTest, AdaptMatchesTheStatisticsOfEverythingAdded) {
  NormalizationAdapter adapter;
  // Channel 0: 1, 2, 3, 4, 5, 6 (mean 3.5, variance 35/12); channel 1: all 7.
  ASSERT_TRUE(adapter.Add(Floats({1, 7, 2, 7}, Shape{1, 2, 2})).ok());
  ASSERT_TRUE(adapter.Add(Floats({3, 7, 4, 7, 5, 7, 6, 7}, Shape{2, 2, 2})).ok());
  auto norm = adapter.Finish();
  ASSERT_TRUE(norm.ok()) << norm.status();
  EXPECT_THAT(norm->mean(), Pointwise(FloatNear(1e-6), std::vector<float>{3.5f, 7}));
  EXPECT_THAT(norm->variance(), Pointwise(FloatNear(1e-6), std::vector<float>{35.0f / 12, 0}));
  EXPECT_FALSE(adapter.Add(Floats({1, 2, 3}, Shape{1, 3})).ok());  // 3 channels after 2
  EXPECT_FALSE(NormalizationAdapter().Finish().ok());
}

TEST(NormalizationTest, Errors) {
  EXPECT_FALSE(Normalization::Create({1, 2}, {1}).ok());
  EXPECT_FALSE(Normalization::Create({1}, {-1}).ok());
  auto norm = Normalization::Create({1, 2, 3}, {1, 1, 1});
  ASSERT_TRUE(norm.ok());
  EXPECT_FALSE(norm->Apply(Floats({1, 2}, Shape{1, 2})).ok());
}

}  // namespace
}  // namespace sluice
