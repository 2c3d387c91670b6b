#include "ops/random_zoom.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ops/augmentation_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Floats;
using ::sluice::testing::Positions;
using ::sluice::testing::Values;
using ::testing::ElementsAre;

TEST(RandomZoomTest, AFixedDrawOfTwoZoomsOutExactly) {
  // height_factor [1, 1]: zoom 1 + 1 = 2 in both axes (width follows height). A 5x5 image of
  // 10 y + x: rows and columns each sample 2i - 2, reflected: -2 -> 1, 6 -> 3.
  auto zoom = RandomZoom::Create({1, 1});
  ASSERT_TRUE(zoom.ok());
  auto out = zoom->Apply(Positions(1, 5, 5), 3);
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> v = Values(*out);
  const int index[5] = {1, 0, 2, 4, 3};
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 5; ++x) EXPECT_EQ(v[y * 5 + x], 10 * index[y] + index[x]) << y << x;
  }
}

TEST(RandomZoomTest, WidthFactorOfItsOwn) {
  // Height zoom 1 (factor 0), width zoom 2: only the columns change.
  auto zoom = RandomZoom::Create({0, 0}, FactorRange{1, 1});
  ASSERT_TRUE(zoom.ok());
  auto out = zoom->Apply(Floats({0, 1, 2, 3, 4}, Shape{1, 5, 1}), 0);
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Values(*out), ElementsAre(1, 0, 2, 4, 3));
}

TEST(RandomZoomTest, SeededAndReproducible) {
  auto zoom = RandomZoom::Create(0.3);
  ASSERT_TRUE(zoom.ok());
  const Tensor batch = Positions(4, 8, 8);
  auto a = zoom->Apply(batch, 9), b = zoom->Apply(batch, 9), c = zoom->Apply(batch, 10);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_TRUE(a->Equals(*b));
  EXPECT_FALSE(a->Equals(*c));
}

TEST(RandomZoomTest, FactorsBelowMinusOneAreErrors) {
  EXPECT_EQ(RandomZoom::Create({-1.5, 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RandomZoom::Create({0, 0}, FactorRange{-2, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
