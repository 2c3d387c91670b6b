#include "train/ops/pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

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

// As PyTorch's and TensorFlow's: a NaN anywhere in a window is its maximum, and the gradient goes
// to it. 19 channels: the vector loop and its tail.
TEST(PoolTest, MaxPoolKeepsANaNWhereverItIsInTheWindow) {
  constexpr int64_t kChannels = 19;
  for (int position = 0; position < 4; ++position) {
    for (int64_t channel : {0, 7, 18}) {
      Tensor x(DType::kFloat32, Shape{1, 2, 2, kChannels});
      for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>(i);
      x.data<float>()[position * kChannels + channel] = std::nanf("");
      autodiff::Tape tape;
      tape.Watch(x);
      absl::StatusOr<Tensor> y = MaxPool2D(x);
      ASSERT_TRUE(y.ok()) << y.status();
      for (int64_t c = 0; c < kChannels; ++c) {
        if (c == channel) {
          EXPECT_TRUE(std::isnan(y->data<float>()[c])) << "NaN at " << position << " lost";
        } else {
          EXPECT_EQ(y->data<float>()[c], static_cast<float>(3 * kChannels + c));
        }
      }
      auto g = tape.Gradient(*y, {x});
      ASSERT_TRUE(g.ok()) << g.status();
      const float* grad = (*g)[0]->data<float>();
      for (int p = 0; p < 4; ++p) {
        EXPECT_EQ(grad[p * kChannels + channel], p == position ? 1.0f : 0.0f) << p;
        EXPECT_EQ(grad[p * kChannels + (channel + 1) % kChannels], p == 3 ? 1.0f : 0.0f) << p;
      }
    }
  }
}

// Overlapping windows (3 x 3, stride 1 and 2, padded): against the maximum over each window by
// hand, and the gradient goes once per window to its first maximum, so ties do not double it.
TEST(PoolTest, MaxPoolMatchesItsDefinitionWithOverlapsPaddingAndTies) {
  Tensor x(DType::kFloat32, Shape{2, 5, 6, 3});
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.data<float>()[i] = static_cast<float>((i * 7) % 11);  // many ties
  }
  for (int64_t stride : {1, 2}) {
    const Pool2DOptions options{.window_h = 3,
                                .window_w = 3,
                                .stride_h = stride,
                                .stride_w = stride,
                                .padding = Padding::kSame};
    autodiff::Tape tape;
    tape.Watch(x);
    absl::StatusOr<Tensor> y = MaxPool2D(x, options);
    ASSERT_TRUE(y.ok()) << y.status();
    const int64_t oh = y->dim(1), ow = y->dim(2);
    // TF's SAME: max((out - 1) * stride + window - size, 0) padding, the smaller half before.
    const int64_t pad_h = std::max<int64_t>(0, (oh - 1) * stride + 3 - 5) / 2;
    const int64_t pad_w = std::max<int64_t>(0, (ow - 1) * stride + 3 - 6) / 2;
    std::vector<float> want_grad(x.num_elements(), 0.0f);
    for (int64_t n = 0; n < 2; ++n) {
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          for (int64_t c = 0; c < 3; ++c) {
            float best = -INFINITY;
            int64_t at = -1;
            for (int64_t h = i * stride - pad_h; h < i * stride - pad_h + 3; ++h) {
              for (int64_t w = j * stride - pad_w; w < j * stride - pad_w + 3; ++w) {
                if (h < 0 || h >= 5 || w < 0 || w >= 6) continue;
                const int64_t k = ((n * 5 + h) * 6 + w) * 3 + c;
                if (x.data<float>()[k] > best) best = x.data<float>()[k], at = k;
              }
            }
            EXPECT_EQ(y->data<float>()[((n * oh + i) * ow + j) * 3 + c], best);
            want_grad[at] += 1.0f;
          }
        }
      }
    }
    auto g = tape.Gradient(*y, {x});
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_THAT(Values(*(*g)[0]), ::testing::ElementsAreArray(want_grad)) << "stride " << stride;
  }
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
