#include "train/ops/dropout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "tests/train/gradient_check.h"

namespace sluice::train::ops {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;

TEST(DropoutTest, KeepsOrZeroesAndScales) {
  Tensor x = RandomTensor({1000}, 61, 1.0f, 2.0f);
  Tensor y = *Dropout(x, {.rate = 0.25f, .seed = 5});
  int dropped = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const float v = y.data<float>()[i];
    if (v == 0) {
      ++dropped;
    } else {
      EXPECT_FLOAT_EQ(v, x.data<float>()[i] / 0.75f);
    }
  }
  EXPECT_GT(dropped, 200);
  EXPECT_LT(dropped, 300);
}

TEST(DropoutTest, SeedDecidesMask) {
  Tensor x = RandomTensor({64}, 62, 1.0f, 2.0f);
  EXPECT_TRUE(Dropout(x, {.seed = 1})->Equals(*Dropout(x, {.seed = 1})));
  EXPECT_FALSE(Dropout(x, {.seed = 1})->Equals(*Dropout(x, {.seed = 2})));
  EXPECT_TRUE(Dropout(x, {.rate = 0})->Equals(x));
  EXPECT_FALSE(Dropout(x, {.rate = 1}).ok());
}

// SplitMix64's finaliser, written again here from its published definition.
uint64_t SplitMix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Element i is kept when the top 24 bits of SplitMix64(key ^ i * golden), key = SplitMix64(seed
// + golden), read as a fraction of 2^24, reach the rate: the draw the CUDA kernel makes too, so a
// seed drops the same elements on every device, and whatever the number of threads (this tensor
// spans several of the CPU's parallel chunks).
TEST(DropoutTest, TheMaskIsTheCounterBasedDrawOfEachIndex) {
  constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;
  // The reference generator's first output from state 0.
  ASSERT_EQ(SplitMix64(0 + kGolden), 0xe220a8397b1dcdafull);
  const int64_t n = 200003;
  const float rate = 0.3f;
  Tensor ones(DType::kFloat32, Shape{n});
  for (float& v : ones.flat<float>()) v = 1.0f;
  Tensor y = *Dropout(ones, {.rate = rate, .seed = 77});
  const uint64_t key = SplitMix64(77 + kGolden);
  int64_t wrong = 0, kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = SplitMix64(key ^ (static_cast<uint64_t>(i) * kGolden));
    const bool keep = static_cast<double>(bits >> 40) / 16777216.0 >= rate;
    kept += keep;
    wrong += y.data<float>()[i] != (keep ? 1.0f / (1.0f - rate) : 0.0f);
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_NEAR(static_cast<double>(kept) / n, 1.0 - rate, 0.005);
}

TEST(DropoutTest, GradientsMatchFiniteDifferences) {
  EXPECT_EQ(
      CheckGradients(
          [](const std::vector<Tensor>& in) { return Dropout(in[0], {.rate = 0.4f, .seed = 3}); },
          {RandomTensor({4, 5}, 63)}),
      "");
}

}  // namespace
}  // namespace sluice::train::ops
