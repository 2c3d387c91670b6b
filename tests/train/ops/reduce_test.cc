#include "train/ops/reduce.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tests/train/gradient_check.h"

namespace sluice::train::ops {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;

TEST(ReduceTest, ForwardValues) {
  Tensor x = T({1, 5, 3, 4, 2, 6}, {2, 3});
  EXPECT_THAT(Values(*Sum(x)), ElementsAre(21));
  EXPECT_THAT(Values(*Sum(x, {0})), ElementsAre(5, 7, 9));
  EXPECT_THAT(Values(*Sum(x, {-1})), ElementsAre(9, 12));
  EXPECT_THAT(Values(*Mean(x, {1})), ElementsAre(3, 4));
  EXPECT_THAT(Values(*Max(x, {1})), ElementsAre(5, 6));
  EXPECT_THAT(Values(*Max(x, {0})), ElementsAre(4, 5, 6));
  EXPECT_EQ(Sum(x, {1}, true)->shape(), Shape({2, 1}));
  EXPECT_EQ(Sum(x)->shape(), Shape({}));
  EXPECT_FALSE(Sum(x, {2}).ok());
}

TEST(ReduceTest, MaxSplitsGradientBetweenTies) {
  Tensor x = T({3, 1, 3}, {3});
  autodiff::Tape tape;
  tape.Watch(x);
  auto g = *tape.Gradient(*Max(x), {x});
  EXPECT_THAT(Values(*g[0]), ElementsAre(0.5f, 0, 0.5f));
}

TEST(ReduceTest, GradientsMatchFiniteDifferences) {
  // Distinct values at least 0.05 apart, so no finite difference crosses a tie in Max.
  Tensor x(DType::kFloat32, Shape{2, 3, 4});
  for (int64_t i = 0; i < 24; ++i) x.data<float>()[i] = 0.05f * static_cast<float>((i * 7) % 24);
  for (auto op : {Sum, Mean, Max}) {
    for (std::vector<int> axes : {std::vector<int>{}, {0}, {1, 2}, {-1}}) {
      for (bool keep : {false, true}) {
        EXPECT_EQ(CheckGradients(
                      [&](const std::vector<Tensor>& in) { return op(in[0], axes, keep); }, {x}),
                  "");
      }
    }
  }
}

}  // namespace
}  // namespace sluice::train::ops
