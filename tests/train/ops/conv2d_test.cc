#include "train/ops/conv2d.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "tests/train/gradient_check.h"
#include "tests/train/sequential_fusion.h"
#include "tests/train/skip_without_bfloat16.h"
#include "train/autodiff/tape.h"
#include "train/backend/compute_precision.h"
#include "train/backend/cpu/cpu_backend.h"
#include "train/layers/batch_norm.h"
#include "train/layers/conv2d.h"
#include "train/layers/relu.h"
#include "train/ops/activations.h"
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

// A grouped convolution written out in float64 loops, independent of the backends: output
// channel j of group j / (o / groups) sums input channels of that group only, the filter
// [kh, kw, c / groups, o], TF's SAME or VALID padding from ComputeWindow.
std::vector<double> GroupedConvReference(const Tensor& x, const Tensor& f, const Conv2DOptions& o) {
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
  const int64_t kh = f.dim(0), kw = f.dim(1), cg = f.dim(2), oc = f.dim(3);
  const int64_t og = oc / o.groups;
  const Window wh = *ComputeWindow(h, kh, o.stride_h, o.dilation_h, o.padding);
  const Window ww = *ComputeWindow(w, kw, o.stride_w, o.dilation_w, o.padding);
  std::vector<double> out;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t i = 0; i < wh.out; ++i) {
      for (int64_t j = 0; j < ww.out; ++j) {
        for (int64_t k = 0; k < oc; ++k) {
          const int64_t group = k / og;
          double sum = 0;
          for (int64_t p = 0; p < kh; ++p) {
            for (int64_t q = 0; q < kw; ++q) {
              const int64_t y = i * o.stride_h + p * o.dilation_h - wh.pad_before;
              const int64_t z = j * o.stride_w + q * o.dilation_w - ww.pad_before;
              if (y < 0 || y >= h || z < 0 || z >= w) continue;
              for (int64_t ci = 0; ci < cg; ++ci) {
                const int64_t channel = group * cg + ci;
                sum += static_cast<double>(x.data<float>()[((b * h + y) * w + z) * c + channel]) *
                       f.data<float>()[((p * kw + q) * cg + ci) * oc + k];
              }
            }
          }
          out.push_back(sum);
        }
      }
    }
  }
  return out;
}

TEST(Conv2DTest, GroupedAndDepthwiseConvolutionsMatchTheirDefinition) {
  struct Case {
    int64_t c, o, groups;
    Conv2DOptions options;
  };
  for (const Case& k :
       {Case{4, 6, 2, {}}, Case{6, 6, 3, {.stride_h = 2, .padding = Padding::kSame}},
        // Depthwise: groups = channels, 1 and 2 filters per channel.
        Case{3, 3, 3, {.padding = Padding::kSame}},
        Case{3, 6, 3, {.stride_w = 2, .dilation_h = 2, .padding = Padding::kSame}},
        Case{5, 10, 5, {.stride_h = 2, .stride_w = 2}}}) {
    Conv2DOptions options = k.options;
    options.groups = k.groups;
    const Tensor x = RandomTensor({2, 7, 6, k.c}, 90),
                 f = RandomTensor({3, 2, k.c / k.groups, k.o}, 91);
    absl::StatusOr<Tensor> y = Conv2D(x, f, options);
    ASSERT_TRUE(y.ok()) << y.status();
    const std::vector<double> want = GroupedConvReference(x, f, options);
    ASSERT_EQ(static_cast<size_t>(y->num_elements()), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(y->data<float>()[i], want[i], 1e-5) << "groups " << k.groups << " at " << i;
    }
    // The fused bias too.
    const Tensor b = RandomTensor({k.o}, 92);
    absl::StatusOr<Tensor> yb = Conv2D(x, f, b, options);
    ASSERT_TRUE(yb.ok()) << yb.status();
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(yb->data<float>()[i], want[i] + b.data<float>()[i % k.o], 1e-5) << i;
    }
  }
}

TEST(Conv2DTest, GroupedGradientsMatchFiniteDifferences) {
  for (const Conv2DOptions& options :
       {Conv2DOptions{.groups = 2},
        Conv2DOptions{.stride_h = 2, .padding = Padding::kSame, .groups = 4},
        Conv2DOptions{.dilation_w = 2, .padding = Padding::kSame, .groups = 4}}) {
    const Tensor x = RandomTensor({2, 5, 6, 4}, 93);
    const Tensor f = RandomTensor({3, 3, 4 / options.groups, 8}, 94), b = RandomTensor({8}, 95);
    EXPECT_EQ(
        CheckGradients([&](const std::vector<Tensor>& in) { return Conv2D(in[0], in[1], options); },
                       {x, f}),
        "")
        << options.groups;
    EXPECT_EQ(
        CheckGradients(
            [&](const std::vector<Tensor>& in) { return Conv2D(in[0], in[1], in[2], options); },
            {x, f, b}),
        "")
        << options.groups;
  }
}

// Under mixed_bfloat16 the CPU reads bfloat16 operands through its own grouped primitives:
// the forward within bfloat16's rounding of the reference, and the gradients have their shapes.
TEST(Conv2DTest, GroupedConvolutionRunsUnderMixedBFloat16) {
  SLUICE_SKIP_WITHOUT_CPU_BFLOAT16();
  backend::ScopedPrecision scope(backend::Precision::kMixedBFloat16);
  const Conv2DOptions options{.padding = Padding::kSame, .groups = 4};
  const Tensor x = RandomTensor({2, 5, 5, 4}, 99), f = RandomTensor({3, 3, 1, 8}, 100);
  autodiff::Tape tape;
  tape.Watch(x), tape.Watch(f);
  absl::StatusOr<Tensor> y = Conv2D(x, f, options);
  ASSERT_TRUE(y.ok()) << y.status();
  const std::vector<double> want = GroupedConvReference(x, f, options);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(y->data<float>()[i], want[i], 5e-2) << i;
  auto grads = tape.Gradient(*Sum(*y), {x, f});
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_EQ((*grads)[0]->shape(), x.shape());
  EXPECT_EQ((*grads)[1]->shape(), f.shape());
}

TEST(Conv2DTest, GroupsThatDoNotDivideTheChannelsAreErrors) {
  const Tensor x = RandomTensor({1, 4, 4, 6}, 96);
  // 6 input channels in 4 groups: the filter cannot have a whole number of them.
  absl::StatusOr<Tensor> y = Conv2D(x, RandomTensor({1, 1, 1, 4}, 97), {.groups = 4});
  EXPECT_TRUE(absl::IsInvalidArgument(y.status()));
  EXPECT_THAT(y.status().message(), ::testing::HasSubstr("times groups, 4"));
  // 3 groups of 2 channels, but 4 outputs do not split into 3.
  y = Conv2D(x, RandomTensor({1, 1, 2, 4}, 98), {.groups = 3});
  EXPECT_THAT(y.status().message(), ::testing::HasSubstr("do not split into 3 groups"));
  y = Conv2D(x, RandomTensor({1, 1, 6, 4}, 98), {.groups = 0});
  EXPECT_THAT(y.status().message(), ::testing::HasSubstr("groups must be at least 1, not 0"));
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
  // With the ReLU (Conv2DBiasReluForward; the default runs it in place after): the same bits,
  // max(., 0) being exact.
  Tensor r_fused(DType::kFloat32, y_fused.shape()), r_default(DType::kFloat32, y_fused.shape());
  ASSERT_TRUE(cpu.Conv2DBiasReluForward(geo, x, f, b, r_fused).ok());
  ASSERT_TRUE(base.Backend::Conv2DBiasReluForward(geo, x, f, b, r_default).ok());
  EXPECT_TRUE(r_fused.Equals(r_default));
  const std::vector<float> relu = Values(r_fused);
  EXPECT_EQ(*std::min_element(relu.begin(), relu.end()), 0.0f);  // some cut, none below
  // And the bias gradient is the sum of g over its 32 positions per channel.
  for (int64_t o = 0; o < 4; ++o) {
    double sum = 0;
    for (int64_t i = o; i < g.num_elements(); i += 4) sum += g.data<float>()[i];
    EXPECT_NEAR(gb_fused.data<float>()[o], sum, 1e-5) << o;
  }
}

// Conv2DBiasRelu (the ReLU inside the convolution's kernel) against Conv2D with bias, then Relu:
// the output and the three gradients, bit for bit, in float32 and under mixed_bfloat16.
void ExpectBiasReluGivesTheBitsOfConvThenRelu(backend::Precision precision) {
  backend::ScopedPrecision scope(precision);
  // A bias that makes about half the outputs negative; channels past one vector.
  const Tensor x = RandomTensor({3, 9, 9, 5}, 31), f = RandomTensor({3, 3, 5, 19}, 32),
               b = RandomTensor({19}, 33, -0.5f, 0.5f), w = RandomTensor({3, 9, 9, 19}, 34);
  const Conv2DOptions options{.padding = Padding::kSame};
  auto run = [&](bool fused) {
    autodiff::Tape tape;
    for (const Tensor* t : {&x, &f, &b}) tape.Watch(*t);
    absl::StatusOr<Tensor> y =
        fused ? Conv2DBiasRelu(x, f, b, options) : Relu(*Conv2D(x, f, b, options));
    EXPECT_TRUE(y.ok()) << y.status();
    auto g = tape.Gradient(*Sum(*Mul(*y, w)), {x, f, b});
    EXPECT_TRUE(g.ok()) << g.status();
    std::vector<Tensor> out = {*y};
    for (const auto& t : *g) out.push_back(*t);
    return out;
  };
  const std::vector<Tensor> fused = run(true), apart = run(false);
  ASSERT_EQ(fused.size(), 4u);
  int64_t zeros = 0;
  for (int64_t i = 0; i < fused[0].num_elements(); ++i) zeros += fused[0].data<float>()[i] == 0;
  EXPECT_GT(zeros, fused[0].num_elements() / 5);  // the ReLU cut something
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_TRUE(fused[i].Equals(apart[i])) << i;
}

TEST(Conv2DTest, BiasReluGivesTheBitsOfConvThenReluInFloat32) {
  ExpectBiasReluGivesTheBitsOfConvThenRelu(backend::Precision::kFloat32);
}

TEST(Conv2DTest, BiasReluGivesTheBitsOfConvThenReluUnderMixedBFloat16) {
  SLUICE_SKIP_WITHOUT_CPU_BFLOAT16();
  ExpectBiasReluGivesTheBitsOfConvThenRelu(backend::Precision::kMixedBFloat16);
}

TEST(Conv2DTest, BiasReluGradientsMatchFiniteDifferences) {
  // Inputs away from the ReLU's kink: the bias shifts every sum well above or below 0.
  const Tensor x = RandomTensor({1, 4, 4, 2}, 41), f = RandomTensor({2, 2, 2, 3}, 42),
               b = T({1.5f, -3.0f, 2.0f}, {3});
  EXPECT_EQ(
      CheckGradients(
          [](const std::vector<Tensor>& in) { return Conv2DBiasRelu(in[0], in[1], in[2], {}); },
          {x, f, b}),
      "");
}

TEST(Conv2DTest, BiasReluWritesFloat32Only) {
  backend::ScopedPrecision scope(backend::Precision::kMixedBFloat16);
  absl::StatusOr<Tensor> y =
      Conv2DBiasRelu(RandomTensor({1, 4, 4, 2}, 43), RandomTensor({2, 2, 2, 3}, 44),
                     RandomTensor({3}, 45), {.keep_compute_dtype = true});
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(y.status().message(), ::testing::HasSubstr("Conv2DBiasRelu: writes float32"));
}

// Sequential runs a Conv2D (bias, linear) or a BatchNorm followed by a plain ReLU as one op: the
// same bits as the layers run apart (each in a Sequential of its own, where nothing fuses).
TEST(Conv2DTest, SequentialFusesConvolutionsAndBatchNormsWithTheReluAfterThem) {
  auto make = [](bool apart) {
    std::vector<std::unique_ptr<layers::Module>> layers;
    layers::Conv2DLayerOptions conv{.conv = {.padding = Padding::kSame}, .seed = 5};
    layers.push_back(std::make_unique<layers::Conv2D>(3, 8, 3, 3, conv));
    layers.push_back(std::make_unique<layers::ReLU>());
    conv.use_bias = false;
    conv.seed = 6;
    layers.push_back(std::make_unique<layers::Conv2D>(8, 8, 3, 3, conv));
    layers.push_back(std::make_unique<layers::BatchNorm>(8));
    layers.push_back(std::make_unique<layers::ReLU>());
    return testing::SequentialOf(std::move(layers), apart);
  };
  auto fused = make(false), apart = make(true);
  EXPECT_TRUE(fused->module(0).FusesRelu());
  EXPECT_FALSE(fused->module(2).FusesRelu());  // no bias: nothing to fuse into
  EXPECT_TRUE(fused->module(3).FusesRelu());
  const Tensor x = RandomTensor({4, 7, 7, 3}, 7), w = RandomTensor({4, 7, 7, 8}, 8);
  const std::vector<Tensor> a = testing::OutputAndGradients(*fused, x, w),
                            b = testing::OutputAndGradients(*apart, x, w);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GE(a.size(), 6u);  // y, the kernels, the bias, gamma and beta
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].Equals(b[i])) << i;
}

}  // namespace
}  // namespace sluice::train::ops
