#include "ops/random_rotation.h"

#include <numbers>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ops/augmentation_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Positions;
using ::sluice::testing::Values;
using ::testing::FloatNear;
using ::testing::Pointwise;

TEST(RandomRotationTest, AFixedDrawOfAQuarterTurnIsExact) {
  auto rotate = RandomRotation::Create({0.25, 0.25});  // always 90 degrees counter-clockwise
  ASSERT_TRUE(rotate.ok());
  auto out = rotate->Apply(Positions(2, 3, 3), 11);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(
      Values(*out),
      Pointwise(FloatNear(1e-4), std::vector<float>{2, 12, 22, 1, 11, 21, 0, 10, 20,  //
                                                    102, 112, 122, 101, 111, 121, 100, 110, 120}));
}

TEST(RandomRotationTest, SeededPerImageDrawsWithinTheFactor) {
  auto rotate = RandomRotation::Create(0.1, {.interpolation = Interpolation::kNearest});
  ASSERT_TRUE(rotate.ok());
  const Tensor batch = Positions(8, 9, 9);
  auto a = rotate->Apply(batch, 5), b = rotate->Apply(batch, 5), c = rotate->Apply(batch, 6);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_TRUE(a->Equals(*b));   // same seed, same rotations
  EXPECT_FALSE(a->Equals(*c));  // another seed, others
  // The centre pixel (4, 4) stays put whatever the angle.
  std::set<float> corners;
  for (int64_t i = 0; i < 8; ++i) {
    const float* image = a->data<float>() + i * 81;
    EXPECT_EQ(image[4 * 9 + 4], 100 * i + 44);
    corners.insert(image[0]);
  }
  EXPECT_GT(corners.size(), 1u);  // the images of a batch get different angles
}

TEST(RandomRotationTest, Errors) {
  EXPECT_EQ(RandomRotation::Create({0.3, 0.1}).status().code(), absl::StatusCode::kInvalidArgument);
  auto rotate = RandomRotation::Create(0.1);
  ASSERT_TRUE(rotate.ok());
  Tensor ints(DType::kInt64, Shape{2, 2, 1});
  EXPECT_EQ(rotate->Apply(ints, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
