#include "train/ops/conv2d.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tests/train/gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/backend/cpu/cpu_backend.h"
#include "train/ops/arithmetic.h"
#include "train/ops/reduce.h"

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

// PyTorch's and ONNX's padding: 1 row on top, none below, 2 columns left, 1 right, each zero.
TEST(Conv2DTest, ExplicitPaddingPadsWithZerosWhereItSays) {
  const Conv2DOptions options{.padding = Padding::kExplicit,
                              .pads = {.top = 1, .bottom = 0, .left = 1, .right = 1}};
  Tensor y = *Conv2D(Image(), Diagonal(), options);
  EXPECT_EQ(y.shape(), Shape({1, 3, 4, 1}));  // (3 + 1 - 2) + 1 rows, (3 + 2 - 2) + 1 columns
  // y[i][j] = x[i-1][j-1] + x[i][j] over the padded image.
  EXPECT_THAT(Values(y), ElementsAre(1, 2, 3, 0, 4, 6, 8, 3, 7, 12, 14, 6));
  // A stride that leaves end padding unread, and gradients through the padding.
  const Conv2DOptions strided{.stride_h = 2,
                              .stride_w = 2,
                              .padding = Padding::kExplicit,
                              .pads = {.top = 1, .bottom = 1, .left = 0, .right = 1}};
  EXPECT_EQ(
      CheckGradients([&](const std::vector<Tensor>& in) { return Conv2D(in[0], in[1], strided); },
                     {RandomTensor({2, 5, 6, 3}, 3), RandomTensor({3, 3, 3, 2}, 4)}),
      "");
  // A pad as large as the kernel's span is refused, naming it.
  const Conv2DOptions wide{.padding = Padding::kExplicit, .pads = {.top = 2}};
  EXPECT_THAT(std::string(Conv2D(Image(), Diagonal(), wide).status().message()),
              ::testing::HasSubstr("padding 2 and 0 must lie in [0, 2)"));
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

// The bias fused into the convolution's kernels: by hand on the diagonal filter, then against
// Conv2D and Add (the same sums in another order) forward and backward, and finite differences.
TEST(Conv2DTest, BiasIsAddedAtEveryPositionInTheConvolutionsKernels) {
  EXPECT_THAT(Values(*Conv2D(Image(), Diagonal(), T({0.5f}, {1}))),
              ElementsAre(6.5f, 8.5f, 12.5f, 14.5f));
  const Tensor x = RandomTensor({2, 6, 5, 3}, 73), f = RandomTensor({3, 3, 3, 4}, 74),
               b = RandomTensor({4}, 75);
  const Conv2DOptions options{.stride_h = 2, .padding = Padding::kSame};
  auto run = [&](bool fused) {
    autodiff::Tape tape;
    tape.Watch(x), tape.Watch(f), tape.Watch(b);
    absl::StatusOr<Tensor> y = fused ? Conv2D(x, f, b, options) : Add(*Conv2D(x, f, options), b);
    EXPECT_TRUE(y.ok()) << y.status();
    // A weighted sum, so that each position's gradient differs.
    absl::StatusOr<Tensor> loss = Sum(*Mul(*y, RandomTensor(y->shape(), 76)));
    auto grads = tape.Gradient(*loss, {x, f, b});
    EXPECT_TRUE(grads.ok()) << grads.status();
    return std::vector<Tensor>{*y, *(*grads)[0], *(*grads)[1], *(*grads)[2]};
  };
  const std::vector<Tensor> fused = run(true), separate = run(false);
  for (size_t i = 0; i < fused.size(); ++i) {
    EXPECT_THAT(Values(fused[i]), Pointwise(FloatNear(1e-5f), Values(separate[i]))) << i;
  }
  EXPECT_EQ(CheckGradients(
                [&](const std::vector<Tensor>& in) { return Conv2D(in[0], in[1], in[2], options); },
                {x, f, b}),
            "");
  EXPECT_FALSE(Conv2D(x, f, RandomTensor({3}, 77)).ok());     // the filter has 4 outputs
  EXPECT_FALSE(Conv2D(x, f, RandomTensor({1, 4}, 77)).ok());  // a vector, not a matrix
}

// A backend without fused kernels gets the defaults (the kernels, then an add or a sum): called
// here on the CPU's own, through the base class, they give the fused results.
TEST(Conv2DTest, TheBackendsDefaultBiasKernelsMatchTheFusedOnes) {
  backend::cpu::CpuBackend& cpu = backend::cpu::CpuBackend::Get();
  backend::Backend& base = cpu;
  backend::ConvGeometry geo;
  geo.n = 2, geo.h = 6, geo.w = 6, geo.c = 3, geo.kh = 3, geo.kw = 3, geo.o = 4;
  geo.oh = 4, geo.ow = 4;
  const Tensor x = RandomTensor({2, 6, 6, 3}, 78), f = RandomTensor({3, 3, 3, 4}, 79),
               b = RandomTensor({4}, 80), g = RandomTensor({2, 4, 4, 4}, 81);
  Tensor y_fused(DType::kFloat32, Shape{2, 4, 4, 4}), y_default(DType::kFloat32, Shape{2, 4, 4, 4});
  Tensor gf_fused(DType::kFloat32, f.shape()), gf_default(DType::kFloat32, f.shape());
  Tensor gb_fused(DType::kFloat32, Shape{4}), gb_default(DType::kFloat32, Shape{4});
  ASSERT_TRUE(cpu.Conv2DBiasForward(geo, x, f, b, y_fused).ok());
  ASSERT_TRUE(base.Backend::Conv2DBiasForward(geo, x, f, b, y_default).ok());
  ASSERT_TRUE(cpu.Conv2DBackwardFilterBias(geo, x, g, gf_fused, gb_fused).ok());
  ASSERT_TRUE(base.Backend::Conv2DBackwardFilterBias(geo, x, g, gf_default, gb_default).ok());
  EXPECT_THAT(Values(y_fused), Pointwise(FloatNear(1e-5f), Values(y_default)));
  EXPECT_THAT(Values(gf_fused), Pointwise(FloatNear(1e-5f), Values(gf_default)));
  EXPECT_THAT(Values(gb_fused), Pointwise(FloatNear(1e-5f), Values(gb_default)));
  // And the bias gradient is the sum of g over its 32 positions per channel.
  for (int64_t o = 0; o < 4; ++o) {
    double sum = 0;
    for (int64_t i = o; i < g.num_elements(); i += 4) sum += g.data<float>()[i];
    EXPECT_NEAR(gb_fused.data<float>()[o], sum, 1e-5) << o;
  }
}

}  // namespace
}  // namespace sluice::train::ops
