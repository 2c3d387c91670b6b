#include "train/ops/conv2d.h"

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

// x = 1..9 as [1, 3, 3, 1]; filter [[1, 0], [0, 1]] as HWIO [2, 2, 1, 1].
Tensor Image() { return T({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1}); }
Tensor Diagonal() { return T({1, 0, 0, 1}, {2, 2, 1, 1}); }

TEST(Conv2DTest, ValidPadding) {
  Tensor y = *Conv2D(Image(), Diagonal());
  EXPECT_EQ(y.shape(), Shape({1, 2, 2, 1}));
  EXPECT_THAT(Values(y), ElementsAre(6, 8, 12, 14));  // x[i,j] + x[i+1,j+1]
}

TEST(Conv2DTest, SamePaddingPadsAtTheEnd) {
  Tensor y = *Conv2D(Image(), Diagonal(), {.padding = Padding::kSame});
  EXPECT_EQ(y.shape(), Shape({1, 3, 3, 1}));
  EXPECT_THAT(Values(y), ElementsAre(6, 8, 3, 12, 14, 6, 7, 8, 9));
}

TEST(Conv2DTest, StrideAndDilation) {
  EXPECT_THAT(Values(*Conv2D(Image(), Diagonal(), {.stride_h = 2, .stride_w = 2})), ElementsAre(6));
  // Taps two apart: x[0,0] + x[2,2].
  EXPECT_THAT(Values(*Conv2D(Image(), Diagonal(), {.dilation_h = 2, .dilation_w = 2})),
              ElementsAre(10));
}

TEST(Conv2DTest, ChannelsAreLastAndFilterIsHwio) {
  // in [1, 1, 1, 2] = {1, 2}; filter [1, 1, 2, 3]: out[o] = f[0][o] + 2 f[1][o].
  Tensor y = *Conv2D(T({1, 2}, {1, 1, 1, 2}), T({1, 2, 3, 4, 5, 6}, {1, 1, 2, 3}));
  EXPECT_EQ(y.shape(), Shape({1, 1, 1, 3}));
  EXPECT_THAT(Values(y), ElementsAre(9, 12, 15));
}

TEST(Conv2DTest, ShapeErrors) {
  EXPECT_FALSE(Conv2D(T({1, 2}, {1, 1, 1, 2}), T({1, 2, 3}, {1, 1, 3, 1})).ok());
  EXPECT_FALSE(Conv2D(Image(), T({1}, {1, 1, 1})).ok());
  EXPECT_FALSE(Conv2D(Image(), T(std::vector<float>(16, 1), {4, 4, 1, 1})).ok());
}

TEST(Conv2DTest, GradientsMatchFiniteDifferences) {
  struct Case {
    Conv2DOptions options;
    int64_t h, w;
  };
  for (const Case& c :
       {Case{{}, 5, 5}, Case{{.stride_h = 2, .stride_w = 1, .padding = Padding::kSame}, 5, 6},
        Case{{.dilation_h = 2, .dilation_w = 2, .padding = Padding::kSame}, 5, 5},
        Case{{.stride_h = 2, .stride_w = 2}, 6, 5}}) {
    Tensor x = RandomTensor({2, c.h, c.w, 3}, 71);
    Tensor f = RandomTensor({3, 2, 3, 4}, 72);
    EXPECT_EQ(CheckGradients(
                  [&c](const std::vector<Tensor>& in) { return Conv2D(in[0], in[1], c.options); },
                  {x, f}),
              "")
        << c.h << "x" << c.w;
  }
}

}  // namespace
}  // namespace sluice::train::ops
