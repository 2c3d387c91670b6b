#include "train/ops/pool.h"

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

TEST(PoolTest, ForwardValues) {
  Tensor x(DType::kFloat32, Shape{1, 4, 4, 1});
  for (int i = 0; i < 16; ++i) x.data<float>()[i] = static_cast<float>(i + 1);
  EXPECT_THAT(Values(*MaxPool2D(x)), ElementsAre(6, 8, 14, 16));
  EXPECT_THAT(Values(*AvgPool2D(x)), ElementsAre(3.5f, 5.5f, 11.5f, 13.5f));
  EXPECT_EQ(MaxPool2D(x, {.window_h = 3, .window_w = 3, .stride_h = 1, .stride_w = 1})->shape(),
            Shape({1, 2, 2, 1}));
}

TEST(PoolTest, SamePaddingExcludesPadding) {
  Tensor x = T({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  Pool2DOptions same{.padding = Padding::kSame};
  EXPECT_THAT(Values(*MaxPool2D(x, same)), ElementsAre(5, 6, 8, 9));
  // Windows {1,2,4,5}, {3,6}, {7,8}, {9}: averaged over real inputs only.
  EXPECT_THAT(Values(*AvgPool2D(x, same)), ElementsAre(3, 4.5f, 7.5f, 9));
}

// ONNX's and PyTorch's max pooling pads never win, even over negative inputs; the average
// counts real inputs only (ONNX's count_include_pad = 0).
TEST(PoolTest, ExplicitPaddingIsNeverCounted) {
  Tensor x = T({-1, -2, -3, -4, -5, -6, -7, -8, -9}, {1, 3, 3, 1});
  const Pool2DOptions options{.window_h = 3,
                              .window_w = 3,
                              .stride_h = 2,
                              .stride_w = 2,
                              .padding = Padding::kExplicit,
                              .pads = {.top = 1, .bottom = 1, .left = 1, .right = 1}};
  EXPECT_THAT(Values(*MaxPool2D(x, options)), ElementsAre(-1, -2, -4, -5));
  // Windows {1,2,4,5}, {2,3,5,6}, {4,5,7,8}, {5,6,8,9}, negated.
  EXPECT_THAT(Values(*AvgPool2D(x, options)), ElementsAre(-3, -4, -6, -7));
}

TEST(PoolTest, ChannelsAreLast) {
  Tensor x = T({1, 10, 2, 20, 3, 30, 4, 40}, {1, 2, 2, 2});
  EXPECT_THAT(Values(*MaxPool2D(x)), ElementsAre(4, 40));
  EXPECT_THAT(Values(*AvgPool2D(x)), ElementsAre(2.5f, 25));
}

TEST(PoolTest, MaxPoolGradientGoesToTheMax) {
  Tensor x = T({1, 7, 3, 2}, {1, 2, 2, 1});
  autodiff::Tape tape;
  tape.Watch(x);
  auto g = *tape.Gradient(*MaxPool2D(x), {x});
  EXPECT_THAT(Values(*g[0]), ElementsAre(0, 1, 0, 0));
}

TEST(PoolTest, GradientsMatchFiniteDifferences) {
  // Distinct values 0.05 apart, so a finite difference never swaps a maximum.
  Tensor x(DType::kFloat32, Shape{2, 5, 5, 2});
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.data<float>()[i] = 0.05f * static_cast<float>((i * 37) % x.num_elements());
  }
  for (Pool2DOptions options :
       {Pool2DOptions{}, Pool2DOptions{.padding = Padding::kSame},
        Pool2DOptions{.window_h = 3, .window_w = 2, .stride_h = 1, .stride_w = 2}}) {
    EXPECT_EQ(CheckGradients(
                  [&](const std::vector<Tensor>& in) { return MaxPool2D(in[0], options); }, {x}),
              "");
    EXPECT_EQ(CheckGradients(
                  [&](const std::vector<Tensor>& in) { return AvgPool2D(in[0], options); }, {x}),
              "");
  }
}

}  // namespace
}  // namespace sluice::train::ops
