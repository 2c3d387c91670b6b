// ZeroPad (train/ops/pad.h): zeros before and after each dim, by hand; finite differences; errors.
#include "train/ops/pad.h"

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
using ::testing::HasSubstr;

TEST(ZeroPadTest, ZerosBeforeAndAfterEachDim) {
  // [2, 3] with one row above and two columns after: [3, 5].
  absl::StatusOr<Tensor> y = ZeroPad(T({1, 2, 3, 4, 5, 6}, {2, 3}), {{1, 0}, {0, 2}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({3, 5}));
  EXPECT_THAT(Values(*y), ElementsAre(0, 0, 0, 0, 0,  //
                                      1, 2, 3, 0, 0,  //
                                      4, 5, 6, 0, 0));
  // Nothing to pad: a copy of the same values.
  y = ZeroPad(T({7, 8}, {2}), {{0, 0}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(7, 8));
}

TEST(ZeroPadTest, GradientsMatchFiniteDifferences) {
  EXPECT_EQ(CheckGradients(
                [](const std::vector<Tensor>& in) {
                  return ZeroPad(in[0], {{0, 1}, {2, 0}, {1, 3}, {0, 0}});
                },
                {RandomTensor({2, 3, 2, 2}, 1)}),
            "");
}

TEST(ZeroPadTest, NegativeOrMiscountedPaddingsAreErrors) {
  const Tensor x = RandomTensor({2, 2}, 2);
  EXPECT_THAT(ZeroPad(x, {{0, 0}, {-1, 0}}).status().message(),
              HasSubstr("padding (-1, 0) of dim 1 is negative"));
  EXPECT_THAT(ZeroPad(x, {{0, 0}}).status().message(),
              HasSubstr("1 padding pairs for an input of rank 2"));
}

}  // namespace
}  // namespace sluice::train::ops
