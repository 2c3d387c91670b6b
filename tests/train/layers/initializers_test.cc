#include "train/layers/initializers.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sluice::train::layers {
namespace {

TEST(InitializersTest, Fans) {
  EXPECT_EQ(ComputeFans(Shape{3, 5}), std::make_pair(3.0, 5.0));
  EXPECT_EQ(ComputeFans(Shape{3, 3, 4, 8}), std::make_pair(36.0, 72.0));
}

TEST(InitializersTest, ZerosAndSeeds) {
  Tensor z = Initialize(Initializer::kZeros, Shape{4, 4});
  for (float v : z.flat<float>()) EXPECT_EQ(v, 0);
  EXPECT_TRUE(Initialize(Initializer::kGlorotUniform, Shape{8, 8}, 3)
                  .Equals(Initialize(Initializer::kGlorotUniform, Shape{8, 8}, 3)));
  EXPECT_FALSE(Initialize(Initializer::kGlorotUniform, Shape{8, 8}, 3)
                   .Equals(Initialize(Initializer::kGlorotUniform, Shape{8, 8}, 4)));
}

TEST(InitializersTest, GlorotUniformFillsItsRange) {
  // fan_in 100, fan_out 200: limit sqrt(6 / 300) = 0.1414; variance limit^2 / 3.
  Tensor t = Initialize(Initializer::kGlorotUniform, Shape{100, 200}, 1);
  const double limit = std::sqrt(6.0 / 300);
  double max_abs = 0, sq = 0;
  for (float v : t.flat<float>()) {
    max_abs = std::max(max_abs, std::abs(static_cast<double>(v)));
    sq += v * v;
  }
  EXPECT_LE(max_abs, limit);
  EXPECT_GT(max_abs, 0.99 * limit);
  EXPECT_NEAR(sq / t.num_elements(), limit * limit / 3, 0.03 * limit * limit / 3);
}

TEST(InitializersTest, HeNormalHasStddevSqrtTwoOverFanIn) {
  Tensor t = Initialize(Initializer::kHeNormal, Shape{3, 3, 16, 64}, 2);  // fan_in 144
  const double stddev = std::sqrt(2.0 / 144);
  double sum = 0, sq = 0, max_abs = 0;
  for (float v : t.flat<float>()) {
    sum += v;
    sq += v * v;
    max_abs = std::max(max_abs, std::abs(static_cast<double>(v)));
  }
  const double n = static_cast<double>(t.num_elements());
  EXPECT_NEAR(sum / n, 0, 0.05 * stddev);
  EXPECT_NEAR(std::sqrt(sq / n), stddev, 0.03 * stddev);
  // Truncated at two of the pre-correction stddevs.
  EXPECT_LE(max_abs, 2 * stddev / 0.87962566103423978 + 1e-6);
}

}  // namespace
}  // namespace sluice::train::layers
