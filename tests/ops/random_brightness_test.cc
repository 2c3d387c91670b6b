#include "ops/random_brightness.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ops/augmentation_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Floats;
using ::sluice::testing::Values;
using ::testing::ElementsAre;

TEST(RandomBrightnessTest, AFixedDrawAddsItsShareOfTheRangeAndClips) {
  auto brightness = RandomBrightness::Create({0.2, 0.2});  // + 0.2 x 255 = 51
  ASSERT_TRUE(brightness.ok());
  auto out = brightness->Apply(Floats({0, 100, 204, 250}, Shape{2, 2, 1}), 0);
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Values(*out), ElementsAre(51, 151, 255, 255));
  auto darker = RandomBrightness::Create({-0.5, -0.5}, {.min = -1, .max = 1});
  ASSERT_TRUE(darker.ok());
  out = darker->Apply(Floats({-1, 0, 0.5f, 1}, Shape{2, 2, 1}), 0);  // - 0.5 x 2 = -1
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Values(*out), ElementsAre(-1, -1, -0.5f, 0));
}

TEST(RandomBrightnessTest, OneDeltaPerImageWithinTheFactor) {
  auto brightness = RandomBrightness::Create(0.1);  // delta in [-25.5, 25.5]
  ASSERT_TRUE(brightness.ok());
  Tensor batch(DType::kFloat32, Shape{4, 2, 2, 1});
  for (int i = 0; i < 16; ++i) batch.data<float>()[i] = 100 + i;
  auto out = brightness->Apply(batch, 4);
  ASSERT_TRUE(out.ok());
  std::vector<float> deltas;
  for (int b = 0; b < 4; ++b) {
    const float delta = out->data<float>()[b * 4] - batch.data<float>()[b * 4];
    EXPECT_LE(std::abs(delta), 25.5f);
    for (int i = 1; i < 4; ++i) {
      EXPECT_NEAR(out->data<float>()[b * 4 + i] - batch.data<float>()[b * 4 + i], delta, 1e-4);
    }
    deltas.push_back(delta);
  }
  EXPECT_NE(deltas[0], deltas[1]);
}

TEST(RandomBrightnessTest, Errors) {
  EXPECT_FALSE(RandomBrightness::Create(1.5).ok());
  EXPECT_FALSE(RandomBrightness::Create(0.1, {.min = 2, .max = 1}).ok());
}

}  // namespace
}  // namespace sluice
