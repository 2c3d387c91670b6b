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

TEST(ReduceTest, AnEmptyAxisSumsToZeroAndAveragesToNaN) {
  const Tensor x(DType::kFloat32, Shape{3, 0});
  EXPECT_THAT(Values(*Sum(x, {1})), ElementsAre(0, 0, 0));
  const std::vector<float> mean = Values(*Mean(x, {1}));
  ASSERT_EQ(mean.size(), 3u);
  for (float m : mean) EXPECT_TRUE(std::isnan(m));
  EXPECT_TRUE(std::isnan(Values(*Mean(x))[0]));
  // Over the non-empty axis: an empty result.
  EXPECT_EQ(Mean(x, {0})->shape(), Shape({0}));
  EXPECT_EQ(Max(x, {1}).status().code(), absl::StatusCode::kInvalidArgument);
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

TEST(ReduceTest, ArgMaxTakesTheFirstMaximum) {
  Tensor x = T({1, 3, 3, -1, -5, -2}, {2, 3});
  Tensor last = *ArgMax(x);
  ASSERT_EQ(last.dtype(), DType::kInt64);
  EXPECT_EQ(last.shape(), Shape({2}));
  // Row 0: 3 at 1 and 2, the first wins; row 1: -1 at 0.
  EXPECT_EQ(last.data<int64_t>()[0], 1);
  EXPECT_EQ(last.data<int64_t>()[1], 0);
  // Down the columns: 1 > -1, 3 > -5, 3 > -2.
  Tensor first = *ArgMax(x, 0);
  EXPECT_EQ(first.shape(), Shape({3}));
  EXPECT_THAT(std::vector<int64_t>(first.data<int64_t>(), first.data<int64_t>() + 3),
              ElementsAre(0, 0, 0));
}

TEST(ReduceTest, ArgMaxOverAMiddleAxisAndNaN) {
  // x[n, i, j]; over i: n = 0: (1 vs 3) -> 1, (2 vs 0) -> 0; n = 1: (0 vs -1) -> 0, (0 vs 4) -> 1.
  Tensor x = T({1, 2, 3, 0, 0, 0, -1, 4}, {2, 2, 2});
  Tensor m = *ArgMax(x, 1);
  EXPECT_EQ(m.shape(), Shape({2, 2}));
  EXPECT_THAT(std::vector<int64_t>(m.data<int64_t>(), m.data<int64_t>() + 4),
              ElementsAre(1, 0, 0, 1));
  Tensor with_nan = T({1, std::nanf(""), 5}, {1, 3});
  EXPECT_EQ(ArgMax(with_nan)->data<int64_t>()[0], 1);
  EXPECT_EQ(ArgMax(x, 3).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ArgMax(Tensor(DType::kFloat32, Shape{2, 0})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::train::ops
