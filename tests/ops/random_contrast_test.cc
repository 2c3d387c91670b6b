#include "ops/random_contrast.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ops/augmentation_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Floats;
using ::sluice::testing::Values;
using ::testing::ElementsAre;

TEST(RandomContrastTest, FactorZeroKeepsTheImage) {
  auto contrast = RandomContrast::Create(0.0);
  ASSERT_TRUE(contrast.ok());
  const Tensor image = Floats({10, 20, 30, 40}, Shape{2, 2, 1});
  auto out = contrast->Apply(image, 3);
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Values(*out), ElementsAre(10, 20, 30, 40));
}

TEST(RandomContrastTest, ScalesEachChannelAboutItsMeanByOneDrawPerImage) {
  auto contrast = RandomContrast::Create(0.5);  // factor in [0.5, 1.5]
  ASSERT_TRUE(contrast.ok());
  // Channel 0 has mean 100, channel 1 mean 50.
  const Tensor image = Floats({90, 40, 110, 60, 80, 30, 120, 70}, Shape{2, 2, 2});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto out = contrast->Apply(image, seed);
    ASSERT_TRUE(out.ok());
    const std::vector<float> v = Values(*out);
    const float factor = (v[0] - 100) / (90 - 100);  // recovered from one value
    EXPECT_GE(factor, 0.5f);
    EXPECT_LE(factor, 1.5f);
    const float expected[8] = {100 - 10 * factor, 50 - 10 * factor,  100 + 10 * factor,
                               50 + 10 * factor,  100 - 20 * factor, 50 - 20 * factor,
                               100 + 20 * factor, 50 + 20 * factor};
    for (int i = 0; i < 8; ++i) EXPECT_NEAR(v[i], expected[i], 1e-3) << i;
  }
}

TEST(RandomContrastTest, ClipsToTheValueRange) {
  auto contrast = RandomContrast::Create({0, 1}, {.min = 0, .max = 1});
  ASSERT_TRUE(contrast.ok());
  const Tensor image = Floats({0, 1, 0, 1}, Shape{2, 2, 1});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto out = contrast->Apply(image, seed);
    ASSERT_TRUE(out.ok());
    for (float v : Values(*out)) {
      EXPECT_GE(v, 0.0f);
      EXPECT_LE(v, 1.0f);
    }
  }
}

TEST(RandomContrastTest, Errors) {
  EXPECT_FALSE(RandomContrast::Create(1.5).ok());
  EXPECT_FALSE(RandomContrast::Create({-0.1, 0.2}).ok());
  EXPECT_FALSE(RandomContrast::Create(0.2, {.min = 1, .max = 1}).ok());
}

}  // namespace
}  // namespace sluice
