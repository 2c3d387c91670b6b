#include "train/ops/transpose.h"

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

TEST(TransposeTest, ForwardValues) {
  Tensor x = T({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = *Transpose(x);
  EXPECT_EQ(y.shape(), Shape({3, 2}));
  EXPECT_THAT(Values(y), ElementsAre(1, 4, 2, 5, 3, 6));
  // [1, 2, 3] -> perm {2, 0, 1} -> [3, 1, 2]
  Tensor z = *Transpose(T({0, 1, 2, 3, 4, 5}, {1, 2, 3}), {2, 0, 1});
  EXPECT_EQ(z.shape(), Shape({3, 1, 2}));
  EXPECT_THAT(Values(z), ElementsAre(0, 3, 1, 4, 2, 5));
  EXPECT_FALSE(Transpose(x, {0, 0}).ok());
}

TEST(TransposeTest, GradientsMatchFiniteDifferences) {
  EXPECT_EQ(CheckGradients(
                [](const std::vector<Tensor>& in) {
                  return Transpose(in[0], {1, 2, 0});
                },
                {RandomTensor({2, 3, 4}, 41)}),
            "");
}

}  // namespace
}  // namespace sluice::train::ops
