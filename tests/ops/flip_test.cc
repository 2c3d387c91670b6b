#include "ops/flip.h"

#include "gtest/gtest.h"
#include "ops/counter_rng.h"
#include "ops/random_resized_crop.h"
#include "tests/ops/image_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::At;
using ::sluice::testing::MakeImage;

int FlipPattern(int64_t y, int64_t x, int64_t c) {
  return static_cast<int>((y * 17 + x * 5 + c * 3) % 256);
}

TEST(FlipTest, MirrorsColumns) {
  for (int64_t channels : {1, 3, 4, 5}) {
    const Tensor image = MakeImage(6, 7, channels, FlipPattern);
    auto out = FlipLeftRight(image);
    ASSERT_TRUE(out.ok());
    ASSERT_EQ(out->shape(), image.shape());
    for (int64_t y = 0; y < 6; ++y) {
      for (int64_t x = 0; x < 7; ++x) {
        for (int64_t c = 0; c < channels; ++c)
          ASSERT_EQ(At(*out, y, x, c), FlipPattern(y, 6 - x, c));
      }
    }
  }
  auto floats = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{1, 3, 2});
  auto flipped = FlipLeftRight(*floats);
  ASSERT_TRUE(flipped.ok());
  EXPECT_TRUE(flipped->Equals(*Tensor::FromVector<float>({5, 6, 3, 4, 1, 2}, Shape{1, 3, 2})));
}

TEST(FlipTest, TwiceIsIdentity) {
  const Tensor image = MakeImage(11, 13, 3, FlipPattern);
  auto once = FlipLeftRight(image);
  auto twice = FlipLeftRight(*once);
  ASSERT_TRUE(twice.ok());
  EXPECT_FALSE(once->Equals(image));
  EXPECT_TRUE(twice->Equals(image));
}

TEST(FlipTest, RandomFlipIsReproducibleAndFlipsAboutHalf) {
  const Tensor image = MakeImage(4, 5, 3, FlipPattern);
  auto mirrored = FlipLeftRight(image);
  int flipped = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    auto a = RandomFlipLeftRight(image, seed);
    auto b = RandomFlipLeftRight(image, seed);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(a->Equals(*b));
    const bool did = RandomFlipDecision(seed);
    EXPECT_TRUE(a->Equals(did ? *mirrored : image));
    if (!did) {
      EXPECT_TRUE(a->SharesBufferWith(image));
    }
    flipped += did;
  }
  // Binomial(1000, 0.5): standard deviation 16.
  EXPECT_GT(flipped, 430);
  EXPECT_LT(flipped, 570);
}

TEST(FlipTest, DecisionIndependentOfTheCropDrawnFromTheSameSeed) {
  // The crop's first draw (its area) and the flip use different streams: large and small crops
  // are flipped equally often.
  int flips_small = 0, small = 0, flips_large = 0, large = 0;
  for (uint64_t seed = 0; seed < 4000; ++seed) {
    const CropWindow w = SampleRandomResizedCrop(1000, 1000, seed);
    const bool did = RandomFlipDecision(seed);
    if (w.height * w.width < 500000) {
      ++small;
      flips_small += did;
    } else {
      ++large;
      flips_large += did;
    }
  }
  ASSERT_GT(small, 500);
  ASSERT_GT(large, 500);
  EXPECT_NEAR(double(flips_small) / small, 0.5, 0.07);
  EXPECT_NEAR(double(flips_large) / large, 0.5, 0.07);
}

TEST(FlipTest, Errors) {
  EXPECT_EQ(FlipLeftRight(Tensor::FromVector<int32_t>({1, 2})).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (uint64_t seed = 0; seed < 4; ++seed) {
    EXPECT_EQ(RandomFlipLeftRight(Tensor::FromVector<int32_t>({1, 2}), seed).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace sluice
