#include "ops/counter_rng.h"

#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(CounterRngTest, SameSeedAndStreamSameSequence) {
  CounterRng a(42, 1), b(42, 1), other_seed(43, 1), other_stream(42, 2);
  int same_seed_diffs = 0, same_stream_diffs = 0;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    same_seed_diffs += x != other_seed.Next();
    same_stream_diffs += x != other_stream.Next();
  }
  EXPECT_EQ(same_seed_diffs, 100);
  EXPECT_EQ(same_stream_diffs, 100);
}

TEST(CounterRngTest, UniformRanges) {
  CounterRng rng(7, 0);
  double sum = 0;
  std::vector<int> counts(10, 0);
  for (int i = 0; i < 100000; ++i) {
    const double u = rng.Uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    const uint64_t k = rng.UniformInt(10);
    ASSERT_LT(k, 10u);
    ++counts[k];
    const double v = rng.Uniform(-2.0, 3.0);
    ASSERT_GE(v, -2.0);
    ASSERT_LT(v, 3.0);
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);
  EXPECT_EQ(rng.UniformInt(1), 0u);
}

TEST(CounterRngTest, ConsecutiveSeedsGiveUnrelatedFirstDraws) {
  // Element seeds are often consecutive: their first bits must still look random.
  std::set<uint64_t> firsts;
  int high_bits = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    const uint64_t x = CounterRng(seed, 5).Next();
    firsts.insert(x);
    high_bits += static_cast<int>(x >> 63);
  }
  EXPECT_EQ(firsts.size(), 1000u);
  EXPECT_NEAR(high_bits, 500, 70);
}

}  // namespace
}  // namespace sluice
