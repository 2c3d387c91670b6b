#include "train/ops/concat.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

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

TEST(ConcatTest, ForwardValues) {
  Tensor a = T({1, 2, 3, 4}, {2, 2});
  Tensor b = T({5, 6}, {2, 1});
  EXPECT_THAT(Values(*Concat({a, b}, 1)), ElementsAre(1, 2, 5, 3, 4, 6));
  EXPECT_THAT(Values(*Concat({a, T({7, 8}, {1, 2})}, 0)), ElementsAre(1, 2, 3, 4, 7, 8));
  EXPECT_EQ(Concat({a, b}, -1)->shape(), Shape({2, 3}));
  EXPECT_FALSE(Concat({a, b}, 0).ok());
  EXPECT_FALSE(Concat({}, 0).ok());
}

TEST(ConcatTest, GradientsMatchFiniteDifferences) {
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Concat(in, 1); },
                           {RandomTensor({2, 1, 3}, 51), RandomTensor({2, 2, 3}, 52)}),
            "");
}

}  // namespace
}  // namespace sluice::train::ops
