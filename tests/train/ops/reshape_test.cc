#include "train/ops/reshape.h"

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

TEST(ReshapeTest, ForwardValues) {
  Tensor x = T({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = *Reshape(x, {3, -1});
  EXPECT_EQ(y.shape(), Shape({3, 2}));
  EXPECT_THAT(Values(y), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_FALSE(y.SharesBufferWith(x));
  EXPECT_FALSE(Reshape(x, {4, -1}).ok());
  EXPECT_FALSE(Reshape(x, {-1, -1}).ok());
  EXPECT_EQ(Flatten(T({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2, 1}))->shape(), Shape({2, 4}));
}

TEST(ReshapeTest, GradientsMatchFiniteDifferences) {
  Tensor x = RandomTensor({2, 3, 2}, 31);
  EXPECT_EQ(CheckGradients(
                [](const std::vector<Tensor>& in) {
                  return Reshape(in[0], {6, 2});
                },
                {x}),
            "");
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Flatten(in[0]); }, {x}), "");
}

}  // namespace
}  // namespace sluice::train::ops
