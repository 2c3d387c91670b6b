// Scalar arithmetic (train/ops/scalar.h): values by hand, gradients by finite differences.
#include "train/ops/scalar.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"

namespace sluice::train::ops {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

TEST(ScalarTest, ValuesByHand) {
  const Tensor x = T({1, -2, 0.5f}, {3});
  EXPECT_THAT(Values(*Scale(x, 3)), ElementsAre(3, -6, 1.5f));
  EXPECT_THAT(Values(*AddScalar(x, -1)), ElementsAre(0, -3, -0.5f));
  const Tensor c = *ScalarLike(2.5f, x);
  EXPECT_EQ(c.shape(), Shape());
  EXPECT_EQ(c.device(), x.device());
  EXPECT_EQ(c.scalar<float>(), 2.5f);
}

TEST(ScalarTest, FiniteDifferences) {
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Scale(in[0], -1.5f); },
                           {RandomTensor({2, 3}, 4)}),
            "");
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return AddScalar(in[0], 0.75f); },
                           {RandomTensor({2, 3}, 5)}),
            "");
}

}  // namespace
}  // namespace sluice::train::ops
