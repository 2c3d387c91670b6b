#include "ops/random_flip.h"

#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ops/augmentation_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Positions;
using ::sluice::testing::Values;

// The four ways a 2x3 image of 10 y + x can come out.
const std::vector<float> kSame = {0, 1, 2, 10, 11, 12};
const std::vector<float> kLeftRight = {2, 1, 0, 12, 11, 10};
const std::vector<float> kUpDown = {10, 11, 12, 0, 1, 2};
const std::vector<float> kBoth = {12, 11, 10, 2, 1, 0};

std::set<std::vector<float>> Outcomes(RandomFlip::Mode mode) {
  const RandomFlip flip(mode);
  std::set<std::vector<float>> seen;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    auto out = flip.Apply(Positions(1, 2, 3), seed);
    EXPECT_TRUE(out.ok()) << out.status();
    seen.insert(Values(*out));
  }
  return seen;
}

TEST(RandomFlipTest, EachModeMakesExactlyItsFlips) {
  EXPECT_EQ(Outcomes(RandomFlip::Mode::kHorizontal),
            (std::set<std::vector<float>>{kSame, kLeftRight}));
  EXPECT_EQ(Outcomes(RandomFlip::Mode::kVertical), (std::set<std::vector<float>>{kSame, kUpDown}));
  // Keras 3: one draw flips both axes or neither (a 180-degree turn), never one alone.
  EXPECT_EQ(Outcomes(RandomFlip::Mode::kHorizontalAndVertical),
            (std::set<std::vector<float>>{kSame, kBoth}));
}

TEST(RandomFlipTest, ImagesOfABatchDrawAlone) {
  const RandomFlip flip(RandomFlip::Mode::kHorizontal);
  auto out = flip.Apply(Positions(32, 2, 3), 7);
  ASSERT_TRUE(out.ok());
  int flipped = 0;
  for (int i = 0; i < 32; ++i) flipped += out->data<float>()[i * 6] == 100 * i + 2;
  EXPECT_GT(flipped, 4);
  EXPECT_LT(flipped, 28);
  auto again = flip.Apply(Positions(32, 2, 3), 7);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(out->Equals(*again));
}

}  // namespace
}  // namespace sluice
