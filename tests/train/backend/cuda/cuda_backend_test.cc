// Every CudaBackend kernel against the CPU backend on random inputs: the same
// call on both, the device result copied back and compared within a
// tolerance. TF32 is off here so that float32 results agree to rounding.

#include "train/backend/cuda/cuda_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "train/backend/broadcast.h"
#include "train/backend/compute_precision.h"
#include "train/backend/cpu/cpu_backend.h"
#include "train/backend/optimizer_update.h"

namespace sluice::train::backend::cuda {
namespace {

using train::backend::BinaryOp;
using train::backend::ConvGeometry;
using train::backend::PoolAlgorithm;
using train::backend::PoolGeometry;
using train::backend::ReduceOp;
using train::backend::UnaryOp;

Tensor Random(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t(DType::kFloat32, shape);
  for (float& v : t.flat<float>()) v = u(rng);
  return t;
}

// |a - b| <= atol + rtol |b| everywhere; the message names the first miss.
::testing::AssertionResult AllClose(const Tensor& got, const Tensor& want, float atol = 1e-5f,
                                    float rtol = 1e-4f) {
  if (!(got.shape() == want.shape())) {
    return ::testing::AssertionFailure()
           << "shape " << got.shape().DebugString() << " vs " << want.shape().DebugString();
  }
  auto g = got.flat<float>();
  auto w = want.flat<float>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", want "
                                           << w[i] << " (of " << g.size() << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) {
      GTEST_SKIP() << "no CUDA device: the CUDA backend is compared with the CPU one on a GPU";
    }
    CudaBackend::Options options;
    options.tf32_matmul = false;
    options.tf32_convolution = false;
    auto backend = CudaBackend::Create(0, options);
    ASSERT_TRUE(backend.ok()) << backend.status();
    gpu_ = std::move(*backend);
  }

  Tensor Dev(const Tensor& host) {
    auto t = gpu_->Allocate(host.dtype(), host.shape());
    EXPECT_TRUE(t.ok()) << t.status();
    EXPECT_TRUE(gpu_->Copy(host, *t).ok());
    return *t;
  }
  Tensor DevEmpty(const Shape& shape, DType dtype = DType::kFloat32) {
    auto t = gpu_->Allocate(dtype, shape);
    EXPECT_TRUE(t.ok()) << t.status();
    return *t;
  }
  Tensor Host(const Tensor& dev) {
    Tensor t(dev.dtype(), dev.shape());
    absl::Status s = gpu_->Copy(dev, t);
    EXPECT_TRUE(s.ok()) << s;
    return t;
  }
  // Random operands of `g` (input, filter and output gradient from seeds `seed`, `seed` + 10
  // and `seed` + 20) and the CPU's float32 forward and backward results for them.
  struct ConvReference {
    Tensor x, f, dy, y, dx, df;
  };
  void CpuConv(const ConvGeometry& g, uint32_t seed, ConvReference* r) {
    r->x = Random({g.n, g.h, g.w, g.c}, seed);
    r->f = Random({g.kh, g.kw, g.c / g.groups, g.o}, seed + 10);
    r->dy = Random({g.n, g.oh, g.ow, g.o}, seed + 20);
    r->y = Tensor(DType::kFloat32, r->dy.shape());
    r->dx = Tensor(DType::kFloat32, r->x.shape());
    r->df = Tensor(DType::kFloat32, r->f.shape());
    ASSERT_TRUE(cpu_.Conv2DForward(g, r->x, r->f, r->y).ok());
    ASSERT_TRUE(cpu_.Conv2DBackwardData(g, r->dy, r->f, r->dx).ok());
    ASSERT_TRUE(cpu_.Conv2DBackwardFilter(g, r->x, r->dy, r->df).ok());
  }

  std::unique_ptr<CudaBackend> gpu_;
  train::backend::cpu::CpuBackend& cpu_ = train::backend::cpu::CpuBackend::Get();
};

TEST_F(CudaBackendTest, CopyRoundTripsAndChecksSizes) {
  Tensor x = Random({7, 13}, 1);
  Tensor d = Dev(x);
  EXPECT_EQ(d.device(), Device::Cuda(0));
  Tensor d2 = DevEmpty({7, 13});
  ASSERT_TRUE(gpu_->Copy(d, d2).ok());  // device to device
  EXPECT_TRUE(Host(d2).Equals(x));
  Tensor wrong(DType::kFloat32, Shape{5});
  EXPECT_FALSE(gpu_->Copy(d, wrong).ok());
}

TEST_F(CudaBackendTest, FillAndKernelsRefuseHostTensors) {
  Tensor d = DevEmpty({1000});
  ASSERT_TRUE(gpu_->Fill(d, 2.5f).ok());
  Tensor want(DType::kFloat32, Shape{1000});
  ASSERT_TRUE(cpu_.Fill(want, 2.5f).ok());
  EXPECT_TRUE(Host(d).Equals(want));
  Tensor host(DType::kFloat32, Shape{4});
  EXPECT_EQ(gpu_->Fill(host, 1.0f).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CudaBackendTest, MatMulAllTransposes) {
  const int64_t m = 37, k = 53, n = 29;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = Random(ta ? Shape{k, m} : Shape{m, k}, 2);
      Tensor b = Random(tb ? Shape{n, k} : Shape{k, n}, 3);
      Tensor want(DType::kFloat32, Shape{m, n});
      ASSERT_TRUE(cpu_.MatMul(a, ta, b, tb, want).ok());
      Tensor out = DevEmpty({m, n});
      ASSERT_TRUE(gpu_->MatMul(Dev(a), ta, Dev(b), tb, out).ok());
      EXPECT_TRUE(AllClose(Host(out), want, 1e-4f, 1e-4f)) << ta << tb;
    }
  }
}

ConvGeometry Geometry(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t o,
                      int64_t stride, int64_t dilation, int64_t pt, int64_t pb, int64_t pl,
                      int64_t pr) {
  ConvGeometry g;
  g.n = n;
  g.h = h;
  g.w = w;
  g.c = c;
  g.kh = g.kw = k;
  g.o = o;
  g.stride_h = g.stride_w = stride;
  g.dilation_h = g.dilation_w = dilation;
  g.pad_top = pt;
  g.pad_bottom = pb;
  g.pad_left = pl;
  g.pad_right = pr;
  const int64_t ek = (k - 1) * dilation + 1;
  g.oh = (h + pt + pb - ek) / stride + 1;
  g.ow = (w + pl + pr - ek) / stride + 1;
  return g;
}

TEST_F(CudaBackendTest, Conv2DForwardAndBackwardMatchCpu) {
  const std::vector<ConvGeometry> cases = {
      Geometry(4, 12, 12, 8, 3, 16, 1, 1, 1, 1, 1, 1),  // SAME, stride 1
      Geometry(3, 10, 10, 5, 3, 7, 2, 1, 0, 1, 0, 1),   // TF SAME, stride 2: asymmetric
      Geometry(2, 13, 11, 4, 5, 6, 1, 2, 0, 0, 0, 0),   // dilated, VALID
      Geometry(2, 9, 9, 16, 1, 8, 2, 1, 0, 0, 0, 0),    // 1x1, stride 2
      Geometry(2, 8, 8, 3, 4, 5, 1, 1, 2, 1, 1, 2),     // even kernel, uneven padding
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const ConvGeometry& g = cases[i];
    SCOPED_TRACE("case " + std::to_string(i));
    ConvReference r;
    ASSERT_NO_FATAL_FAILURE(CpuConv(g, 10 + i, &r));
    const Tensor &x = r.x, &f = r.f, &dy = r.dy, &y = r.y, &dx = r.dx, &df = r.df;
    Tensor gy = DevEmpty(y.shape()), gdx = DevEmpty(x.shape()), gdf = DevEmpty(f.shape());
    Tensor dx_dev = Dev(x), df_dev = Dev(f), dy_dev = Dev(dy);
    ASSERT_TRUE(gpu_->Conv2DForward(g, dx_dev, df_dev, gy).ok());
    ASSERT_TRUE(gpu_->Conv2DBackwardData(g, dy_dev, df_dev, gdx).ok());
    absl::Status s = gpu_->Conv2DBackwardFilter(g, dx_dev, dy_dev, gdf);
    ASSERT_TRUE(s.ok()) << s;
    // cuDNN may pick Winograd or FFT algorithms: a few ulps of the sums.
    EXPECT_TRUE(AllClose(Host(gy), y, 5e-4f, 1e-3f));
    EXPECT_TRUE(AllClose(Host(gdx), dx, 5e-4f, 1e-3f));
    EXPECT_TRUE(AllClose(Host(gdf), df, 5e-4f, 1e-3f));
  }
  EXPECT_EQ(gpu_->NumConvolutionPlans(), 3 * cases.size());
}

// The bias (and ReLU) after a matmul or a convolution in one pass: bit for bit what MatMul or
// Conv2DForward, Binary's add and Unary's relu give one after the other, and close to the CPU's
// fused kernels (oneDNN's post-ops).
TEST_F(CudaBackendTest, BiasAndReluAfterMatMulAndConvolutionMatchTheUnfusedOpsAndCpu) {
  const Tensor a = Random({37, 53}, 80), b = Random({53, 48}, 81), bias = Random({48}, 82);
  const Tensor ad = Dev(a), bd = Dev(b), biasd = Dev(bias);
  for (bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "relu" : "no relu");
    Tensor fused = DevEmpty({37, 48}), unfused = DevEmpty({37, 48});
    ASSERT_TRUE(gpu_->MatMulBias(ad, bd, biasd, relu, fused).ok());
    ASSERT_TRUE(gpu_->MatMul(ad, false, bd, false, unfused).ok());
    ASSERT_TRUE(gpu_->Binary(BinaryOp::kAdd, unfused, biasd, unfused).ok());
    if (relu) {
      ASSERT_TRUE(gpu_->Unary(UnaryOp::kRelu, unfused, unfused).ok());
    }
    EXPECT_TRUE(AllClose(Host(fused), Host(unfused), 0.0f, 0.0f));
    Tensor want(DType::kFloat32, Shape{37, 48});
    ASSERT_TRUE(cpu_.MatMulBias(a, b, bias, relu, want).ok());
    EXPECT_TRUE(AllClose(Host(fused), want, 1e-4f, 1e-4f));
  }
  // 16 channels (a whole number of them in a block's threads) and 7 (not).
  for (int64_t o : {16, 7}) {
    SCOPED_TRACE("filters " + std::to_string(o));
    const ConvGeometry g = Geometry(4, 12, 12, 8, 3, o, 1, 1, 1, 1, 1, 1);
    const Tensor x = Random({g.n, g.h, g.w, g.c}, 83), f = Random({g.kh, g.kw, g.c, g.o}, 84);
    const Tensor cb = Random({o}, 85);
    const Tensor xd = Dev(x), fd = Dev(f), cbd = Dev(cb);
    const Shape out_shape{g.n, g.oh, g.ow, g.o};
    Tensor plain = DevEmpty(out_shape), with_bias = DevEmpty(out_shape),
           with_relu = DevEmpty(out_shape), unfused = DevEmpty(out_shape);
    ASSERT_TRUE(gpu_->Conv2DForward(g, xd, fd, plain).ok());
    ASSERT_TRUE(gpu_->Conv2DBiasForward(g, xd, fd, cbd, with_bias).ok());
    ASSERT_TRUE(gpu_->Conv2DBiasReluForward(g, xd, fd, cbd, with_relu).ok());
    ASSERT_TRUE(gpu_->Binary(BinaryOp::kAdd, plain, cbd, unfused).ok());
    EXPECT_TRUE(AllClose(Host(with_bias), Host(unfused), 0.0f, 0.0f));
    ASSERT_TRUE(gpu_->Unary(UnaryOp::kRelu, unfused, unfused).ok());
    EXPECT_TRUE(AllClose(Host(with_relu), Host(unfused), 0.0f, 0.0f));
    Tensor want(DType::kFloat32, out_shape);
    ASSERT_TRUE(cpu_.Conv2DBiasReluForward(g, x, f, cb, want).ok());
    EXPECT_TRUE(AllClose(Host(with_relu), want, 5e-4f, 1e-3f));
  }
  // A bias that does not match the output's channels is an error.
  Tensor out = DevEmpty({37, 48});
  const absl::Status s = gpu_->MatMulBias(ad, bd, Dev(Random({47}, 86)), false, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("the bias has 47 elements"), std::string::npos) << s;
}

// ||got - want|| / ||want|| over every element: the error of a 16-bit computation, whose
// elementwise error grows with each sum's size.
double RelativeL2Error(const Tensor& got, const Tensor& want) {
  auto g = got.flat<float>();
  auto w = want.flat<float>();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < g.size() && i < w.size(); ++i) {
    diff += (double{g[i]} - w[i]) * (double{g[i]} - w[i]);
    norm += double{w[i]} * w[i];
  }
  return norm == 0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

// Under mixed_float16 and mixed_bfloat16 the convolutions run on 16-bit operands and results
// (cuDNN's pseudo-half configurations, float32 sums) with float32 tensors on both sides: close
// to the CPU's float32 results within the 16-bit formats' rounding (float16: 11 bits, bfloat16:
// 8 bits of mantissa), for one input channel and grouped convolutions too.
TEST_F(CudaBackendTest, SixteenBitConvolutionsUnderTheMixedPoliciesStayClose) {
  std::vector<ConvGeometry> cases = {
      Geometry(4, 12, 12, 8, 3, 16, 1, 1, 1, 1, 1, 1),  // SAME, stride 1
      Geometry(3, 10, 10, 5, 3, 7, 2, 1, 0, 1, 0, 1),   // TF SAME, stride 2: asymmetric
      Geometry(2, 9, 9, 16, 1, 8, 2, 1, 0, 0, 0, 0),    // 1x1, stride 2
      Geometry(4, 12, 12, 1, 3, 16, 1, 1, 1, 1, 1, 1),  // one input channel (a grey image)
      Geometry(2, 9, 9, 8, 3, 12, 1, 1, 1, 1, 1, 1),    // 4 groups (set below)
  };
  cases[4].groups = 4;
  struct Policy {
    train::backend::Precision precision;
    double bound;
  };
  for (const Policy policy : {Policy{train::backend::Precision::kMixedFloat16, 4e-3},
                              Policy{train::backend::Precision::kMixedBFloat16, 2.5e-2}}) {
    SCOPED_TRACE(train::backend::PrecisionName(policy.precision));
    for (size_t i = 0; i < cases.size(); ++i) {
      const ConvGeometry& g = cases[i];
      SCOPED_TRACE("case " + std::to_string(i));
      ConvReference r;
      ASSERT_NO_FATAL_FAILURE(CpuConv(g, 70 + i, &r));
      const Tensor &x = r.x, &f = r.f, &dy = r.dy, &y = r.y, &dx = r.dx, &df = r.df;
      Tensor gy = DevEmpty(y.shape()), gdx = DevEmpty(x.shape()), gdf = DevEmpty(f.shape());
      Tensor x_dev = Dev(x), f_dev = Dev(f), dy_dev = Dev(dy);
      {
        train::backend::ScopedPrecision scope(policy.precision);
        absl::Status s = gpu_->Conv2DForward(g, x_dev, f_dev, gy);
        ASSERT_TRUE(s.ok()) << s;
        s = gpu_->Conv2DBackwardData(g, dy_dev, f_dev, gdx);
        ASSERT_TRUE(s.ok()) << s;
        s = gpu_->Conv2DBackwardFilter(g, x_dev, dy_dev, gdf);
        ASSERT_TRUE(s.ok()) << s;
      }
      EXPECT_LT(RelativeL2Error(Host(gy), y), policy.bound);
      EXPECT_LT(RelativeL2Error(Host(gdx), dx), policy.bound);
      EXPECT_LT(RelativeL2Error(Host(gdf), df), policy.bound);
      // Not float32 in disguise: 16-bit rounding shows where cuDNN surely has 16-bit kernels
      // (channels in multiples of 8). Elsewhere it may have none, and the backend runs the
      // convolution in float32, saying so on stderr (CudaBackend::ConvPlanFor).
      if (i == 0) {
        EXPECT_GT(RelativeL2Error(Host(gy), y), 1e-5);
      }
    }
  }
}

// float32 <-> float16 and bfloat16 casts round to nearest even, and other pairs with a 16-bit
// float are refused with a message.
TEST_F(CudaBackendTest, SixteenBitCastsRoundToNearest) {
  // 1 + 2^-12 is not a float16 (11-bit mantissa): it rounds to 1; 1 + 3 * 2^-11 rounds to even,
  // 1 + 2^-9; bfloat16 keeps 8 bits: 1 + 2^-9 rounds to 1.
  Tensor x = Tensor::FromVector<float>({1.0f, 1.0f + 0x1p-12f, 1.0f + 3 * 0x1p-11f, -2.5f});
  for (const DType half : {DType::kFloat16, DType::kBFloat16}) {
    Tensor h = DevEmpty(x.shape(), half), back = DevEmpty(x.shape());
    ASSERT_TRUE(gpu_->Cast(Dev(x), h).ok());
    ASSERT_TRUE(gpu_->Cast(h, back).ok());
    const Tensor got = Host(back);
    const std::vector<float> want = half == DType::kFloat16
                                        ? std::vector<float>{1.0f, 1.0f, 1.0f + 0x1p-9f, -2.5f}
                                        : std::vector<float>{1.0f, 1.0f, 1.0f, -2.5f};
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got.flat<float>()[i], want[i]) << DTypeName(half) << " element " << i;
    }
  }
  Tensor ints = DevEmpty(x.shape(), DType::kInt32), h = DevEmpty(x.shape(), DType::kFloat16);
  const absl::Status s = gpu_->Cast(ints, h);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("to and from float32 only"));
}

// Grouped convolutions (cuDNN's group count) and depthwise ones (groups = channels), with the
// filter [kh, kw, c / groups, o], against the CPU's (oneDNN's grouped primitives).
TEST_F(CudaBackendTest, GroupedConv2DMatchesCpu) {
  struct Case {
    ConvGeometry g;
    int64_t groups;
  };
  const std::vector<Case> cases = {
      {Geometry(2, 9, 9, 8, 3, 12, 1, 1, 1, 1, 1, 1), 4},   // 4 groups, SAME
      {Geometry(2, 10, 10, 6, 3, 6, 2, 1, 0, 1, 0, 1), 6},  // depthwise, TF SAME stride 2
      {Geometry(3, 11, 9, 5, 3, 10, 1, 2, 0, 0, 0, 0), 5},  // depthwise x2, dilated
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    ConvGeometry g = cases[i].g;
    g.groups = cases[i].groups;
    SCOPED_TRACE("case " + std::to_string(i));
    ConvReference r;
    ASSERT_NO_FATAL_FAILURE(CpuConv(g, 40 + i, &r));
    const Tensor &x = r.x, &f = r.f, &dy = r.dy, &y = r.y, &dx = r.dx, &df = r.df;
    Tensor gy = DevEmpty(y.shape()), gdx = DevEmpty(x.shape()), gdf = DevEmpty(f.shape());
    Tensor dx_dev = Dev(x), df_dev = Dev(f), dy_dev = Dev(dy);
    absl::Status s = gpu_->Conv2DForward(g, dx_dev, df_dev, gy);
    ASSERT_TRUE(s.ok()) << s;
    s = gpu_->Conv2DBackwardData(g, dy_dev, df_dev, gdx);
    ASSERT_TRUE(s.ok()) << s;
    s = gpu_->Conv2DBackwardFilter(g, dx_dev, dy_dev, gdf);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_TRUE(AllClose(Host(gy), y, 5e-4f, 1e-3f));
    EXPECT_TRUE(AllClose(Host(gdx), dx, 5e-4f, 1e-3f));
    EXPECT_TRUE(AllClose(Host(gdf), df, 5e-4f, 1e-3f));
  }
}

TEST_F(CudaBackendTest, TF32ConvolutionStaysClose) {
  auto tf32 = CudaBackend::Create(0, CudaBackend::Options());
  ASSERT_TRUE(tf32.ok());
  const ConvGeometry g = Geometry(4, 16, 16, 32, 3, 32, 1, 1, 1, 1, 1, 1);
  Tensor x = Random({g.n, g.h, g.w, g.c}, 5), f = Random({g.kh, g.kw, g.c, g.o}, 6);
  Tensor y(DType::kFloat32, Shape{g.n, g.oh, g.ow, g.o});
  ASSERT_TRUE(cpu_.Conv2DForward(g, x, f, y).ok());
  Tensor gy = DevEmpty(y.shape());
  ASSERT_TRUE((*tf32)->Conv2DForward(g, Dev(x), Dev(f), gy).ok());
  Tensor out(DType::kFloat32, y.shape());
  ASSERT_TRUE((*tf32)->Copy(gy, out).ok());
  // TF32 keeps 10 mantissa bits: sums of 288 products agree to about 1e-2.
  EXPECT_TRUE(AllClose(out, y, 3e-2f, 1e-2f));
}

TEST_F(CudaBackendTest, PoolingMatchesCpuWithAsymmetricPadding) {
  for (PoolAlgorithm algorithm : {PoolAlgorithm::kMax, PoolAlgorithm::kAvgExcludePadding}) {
    PoolGeometry g;
    g.algorithm = algorithm;
    g.n = 3;
    g.h = 9;
    g.w = 8;
    g.c = 5;
    g.window_h = g.window_w = 3;
    g.stride_h = g.stride_w = 2;
    g.pad_top = 1;
    g.pad_bottom = 1;
    g.pad_left = 0;
    g.pad_right = 1;
    g.oh = (g.h + 2 - 3) / 2 + 1;
    g.ow = (g.w + 1 - 3) / 2 + 1;
    Tensor x = Random({g.n, g.h, g.w, g.c}, 40);
    Tensor dy = Random({g.n, g.oh, g.ow, g.c}, 41);
    Tensor y(DType::kFloat32, dy.shape()), dx(DType::kFloat32, x.shape());
    auto ws = cpu_.Pool2DForward(g, x, y);
    ASSERT_TRUE(ws.ok());
    ASSERT_TRUE(cpu_.Pool2DBackward(g, x, y, *ws, dy, dx).ok());
    Tensor xd = Dev(x), gy = DevEmpty(y.shape()), gdx = DevEmpty(x.shape());
    auto gws = gpu_->Pool2DForward(g, xd, gy);
    ASSERT_TRUE(gws.ok()) << gws.status();
    ASSERT_TRUE(gpu_->Pool2DBackward(g, xd, gy, *gws, Dev(dy), gdx).ok());
    EXPECT_TRUE(AllClose(Host(gy), y)) << static_cast<int>(algorithm);
    EXPECT_TRUE(AllClose(Host(gdx), dx)) << static_cast<int>(algorithm);
  }
}

TEST_F(CudaBackendTest, BatchNormMatchesCpu) {
  const float eps = 1e-3f;
  // resnet-20's first stage at batch 32 (many rows), and more channels than a column tile.
  // Also: one channel; more than a block's threads (several column tiles); empty trailing
  // slices of rows (10,241 rows cut into 1,024 slices of 11).
  for (const Shape& shape :
       {Shape{8, 5, 5, 16}, Shape{32, 3}, Shape{1, 6}, Shape{32, 28, 28, 16}, Shape{4, 6, 6, 100},
        Shape{4096, 1}, Shape{40, 257}, Shape{40, 2048}, Shape{10241, 256}}) {
    SCOPED_TRACE(shape.DebugString());
    const int64_t c = shape.dim(shape.rank() - 1);
    Tensor x = Random(shape, 50, -2.0f, 3.0f), dy = Random(shape, 51);
    Tensor gamma = Random({c}, 52, 0.5f, 1.5f), beta = Random({c}, 53);
    // Training forward.
    Tensor y(DType::kFloat32, shape), mean(DType::kFloat32, Shape{c}),
        var(DType::kFloat32, Shape{c});
    ASSERT_TRUE(cpu_.BatchNormForwardTraining(x, gamma, beta, eps, y, mean, var).ok());
    Tensor xd = Dev(x), gd = Dev(gamma), bd = Dev(beta), dyd = Dev(dy);
    Tensor gy = DevEmpty(shape), gmean = DevEmpty({c}), gvar = DevEmpty({c});
    absl::Status s = gpu_->BatchNormForwardTraining(xd, gd, bd, eps, gy, gmean, gvar);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_TRUE(AllClose(Host(gy), y, 1e-4f, 1e-4f));
    EXPECT_TRUE(AllClose(Host(gmean), mean, 1e-5f, 1e-4f));
    EXPECT_TRUE(AllClose(Host(gvar), var, 1e-5f, 1e-4f));
    // Backward, statistics from the batch and constant.
    for (bool constant : {false, true}) {
      Tensor dx(DType::kFloat32, shape), dg(DType::kFloat32, Shape{c}),
          db(DType::kFloat32, Shape{c});
      ASSERT_TRUE(cpu_.BatchNormBackward(x, gamma, mean, var, dy, eps, constant, dx, dg, db).ok());
      Tensor gdx = DevEmpty(shape), gdg = DevEmpty({c}), gdb = DevEmpty({c});
      s = gpu_->BatchNormBackward(xd, gd, Dev(mean), Dev(var), dyd, eps, constant, gdx, gdg, gdb);
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_TRUE(AllClose(Host(gdx), dx, 1e-4f, 1e-3f)) << constant;
      EXPECT_TRUE(AllClose(Host(gdg), dg, 1e-4f, 1e-3f)) << constant;
      EXPECT_TRUE(AllClose(Host(gdb), db, 1e-4f, 1e-4f)) << constant;
    }
    // Inference with given statistics.
    Tensor rm = Random({c}, 54), rv = Random({c}, 55, 0.5f, 2.0f);
    Tensor yi(DType::kFloat32, shape);
    ASSERT_TRUE(cpu_.BatchNormForwardInference(x, gamma, beta, rm, rv, eps, yi).ok());
    Tensor gyi = DevEmpty(shape);
    ASSERT_TRUE(gpu_->BatchNormForwardInference(xd, gd, bd, Dev(rm), Dev(rv), eps, gyi).ok());
    EXPECT_TRUE(AllClose(Host(gyi), yi, 1e-5f, 1e-4f));
  }
}

// The fused batch norm + ReLU: its forward against the CPU's (each backend with its own
// workspace), and both ways bit for bit against the unfused ops on the GPU, which
// BatchNormMatchesCpu compares with the CPU. (The fused backward is not compared with the CPU's:
// where a pre-activation lies within rounding of 0, the two devices' ReLUs may decide apart, and
// that element's gradient differs by its whole size.)
TEST_F(CudaBackendTest, BatchNormReluMatchesCpuAndTheUnfusedOps) {
  ASSERT_TRUE(gpu_->FusesBatchNormRelu());
  const float eps = 1e-3f;
  for (const Shape& shape :
       {Shape{8, 5, 5, 16}, Shape{32, 3}, Shape{32, 28, 28, 16}, Shape{4, 6, 6, 100},
        Shape{64, 7, 7, 64}, Shape{4096, 1}, Shape{40, 2048}, Shape{10241, 256}}) {
    SCOPED_TRACE(shape.DebugString());
    const int64_t c = shape.dim(shape.rank() - 1);
    Tensor x = Random(shape, 70, -2.0f, 3.0f), dy = Random(shape, 71);
    Tensor gamma = Random({c}, 72, 0.5f, 1.5f), beta = Random({c}, 73, -0.5f, 0.5f);
    Tensor y(DType::kFloat32, shape), mean(DType::kFloat32, Shape{c}),
        var(DType::kFloat32, Shape{c});
    Tensor ws(DType::kUint8, Shape{cpu_.BatchNormReluWorkspaceBytes(x)});
    ASSERT_TRUE(cpu_.BatchNormReluForwardTraining(x, gamma, beta, eps, y, mean, var, ws).ok());

    Tensor xd = Dev(x), gd = Dev(gamma), bd = Dev(beta), dyd = Dev(dy);
    Tensor gy = DevEmpty(shape), gmean = DevEmpty({c}), gvar = DevEmpty({c});
    Tensor gws = DevEmpty(Shape{gpu_->BatchNormReluWorkspaceBytes(xd)}, DType::kUint8);
    absl::Status s = gpu_->BatchNormReluForwardTraining(xd, gd, bd, eps, gy, gmean, gvar, gws);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_TRUE(AllClose(Host(gy), y, 1e-4f, 1e-4f));
    EXPECT_TRUE(AllClose(Host(gmean), mean, 1e-5f, 1e-4f));
    EXPECT_TRUE(AllClose(Host(gvar), var, 1e-5f, 1e-4f));
    Tensor gdx = DevEmpty(shape), gdg = DevEmpty({c}), gdb = DevEmpty({c});
    s = gpu_->BatchNormReluBackward(xd, gd, gmean, gvar, gws, dyd, eps, gdx, gdg, gdb);
    ASSERT_TRUE(s.ok()) << s;

    // The same on the GPU unfused: batch norm, ReLU, the ReLU's backward, batch norm's backward.
    Tensor uy = DevEmpty(shape), umean = DevEmpty({c}), uvar = DevEmpty({c});
    ASSERT_TRUE(gpu_->BatchNormForwardTraining(xd, gd, bd, eps, uy, umean, uvar).ok());
    Tensor ur = DevEmpty(shape), ug = DevEmpty(shape);
    ASSERT_TRUE(gpu_->Unary(UnaryOp::kRelu, uy, ur).ok());
    EXPECT_TRUE(AllClose(Host(gy), Host(ur), 0.0f, 0.0f)) << "the fused ReLU's output";
    ASSERT_TRUE(gpu_->UnaryBackward(UnaryOp::kRelu, uy, ur, dyd, ug).ok());
    Tensor udx = DevEmpty(shape), udg = DevEmpty({c}), udb = DevEmpty({c});
    ASSERT_TRUE(gpu_->BatchNormBackward(xd, gd, umean, uvar, ug, eps, false, udx, udg, udb).ok());
    EXPECT_TRUE(AllClose(Host(gdx), Host(udx), 0.0f, 0.0f)) << "the mask passes what relu does";
    EXPECT_TRUE(AllClose(Host(gdg), Host(udg), 0.0f, 0.0f));
    EXPECT_TRUE(AllClose(Host(gdb), Host(udb), 0.0f, 0.0f));
  }
  // A workspace too small is an error, not a write past its end.
  Tensor xd = Dev(Random({4, 8}, 74)), gd = Dev(Random({8}, 75)), bd = Dev(Random({8}, 76));
  Tensor gy = DevEmpty({4, 8}), gmean = DevEmpty({8}), gvar = DevEmpty({8});
  Tensor small = DevEmpty(Shape{31}, DType::kUint8);
  const absl::Status s =
      gpu_->BatchNormReluForwardTraining(xd, gd, bd, 1e-3f, gy, gmean, gvar, small);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("at least 32 bytes"), std::string::npos) << s;
}

struct ShapePair {
  Shape a, b;
};

TEST_F(CudaBackendTest, BinaryAndItsBackwardMatchCpuWithBroadcasting) {
  const std::vector<ShapePair> cases = {
      {{6}, {6}},          {{64, 256}, {256}}, {{256}, {64, 256}},     {{4, 1, 3}, {1, 5, 1}},
      {{2, 3, 4}, {3, 1}}, {{5, 7}, {}},       {{300, 1000}, {300, 1}}};
  for (BinaryOp op :
       {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv, BinaryOp::kMaximum,
        BinaryOp::kMinimum, BinaryOp::kEqual, BinaryOp::kGreater}) {
    for (const ShapePair& c : cases) {
      SCOPED_TRACE(c.a.DebugString() + " op " + c.b.DebugString() + " " +
                   std::to_string(static_cast<int>(op)));
      auto out_shape = train::backend::BroadcastShapes(c.a, c.b);
      ASSERT_TRUE(out_shape.ok());
      Tensor a = Random(c.a, 60), b = Random(c.b, 61, 0.5f, 2.0f);  // b away from 0 for kDiv
      Tensor g = Random(*out_shape, 62);
      Tensor out(DType::kFloat32, *out_shape), ga(DType::kFloat32, c.a), gb(DType::kFloat32, c.b);
      ASSERT_TRUE(cpu_.Binary(op, a, b, out).ok());
      ASSERT_TRUE(cpu_.BinaryBackward(op, a, b, g, &ga, &gb).ok());
      Tensor ad = Dev(a), bd = Dev(b), gd = Dev(g);
      Tensor gout = DevEmpty(*out_shape), gga = DevEmpty(c.a), ggb = DevEmpty(c.b);
      ASSERT_TRUE(gpu_->Binary(op, ad, bd, gout).ok());
      ASSERT_TRUE(gpu_->BinaryBackward(op, ad, bd, gd, &gga, &ggb).ok());
      EXPECT_TRUE(AllClose(Host(gout), out));
      // Gradients summed over up to 1000 broadcast elements, in another order.
      EXPECT_TRUE(AllClose(Host(gga), ga, 1e-3f, 1e-4f));
      EXPECT_TRUE(AllClose(Host(ggb), gb, 1e-3f, 1e-4f));
    }
  }
}

TEST_F(CudaBackendTest, UnaryAndItsBackwardMatchCpu) {
  for (UnaryOp op :
       {UnaryOp::kRelu, UnaryOp::kSigmoid, UnaryOp::kTanh, UnaryOp::kGelu, UnaryOp::kExp,
        UnaryOp::kLog, UnaryOp::kAbs, UnaryOp::kSoftplus, UnaryOp::kSquare}) {
    // Log's domain is positive.
    const float lo = op == UnaryOp::kLog ? 0.01f : -4.0f;
    Tensor x = Random({1000, 33}, 70, lo, 4.0f), g = Random({1000, 33}, 71);
    Tensor y(DType::kFloat32, x.shape()), dx(DType::kFloat32, x.shape());
    ASSERT_TRUE(cpu_.Unary(op, x, y).ok());
    ASSERT_TRUE(cpu_.UnaryBackward(op, x, y, g, dx).ok());
    Tensor xd = Dev(x), gy = DevEmpty(x.shape()), gdx = DevEmpty(x.shape());
    ASSERT_TRUE(gpu_->Unary(op, xd, gy).ok());
    ASSERT_TRUE(gpu_->UnaryBackward(op, xd, gy, Dev(g), gdx).ok());
    EXPECT_TRUE(AllClose(Host(gy), y, 1e-6f, 1e-5f)) << static_cast<int>(op);
    EXPECT_TRUE(AllClose(Host(gdx), dx, 1e-6f, 1e-5f)) << static_cast<int>(op);
  }
}

TEST_F(CudaBackendTest, DropoutIsInvertedSeededAndDrawsTheCpusMask) {
  const int64_t n = 200000;
  const float rate = 0.3f;
  Tensor x = Random({n}, 80);
  Tensor xd = Dev(x);
  Tensor mask = DevEmpty({n}), out = DevEmpty({n}), mask2 = DevEmpty({n}), out2 = DevEmpty({n}),
         mask3 = DevEmpty({n}), out3 = DevEmpty({n});
  ASSERT_TRUE(gpu_->Dropout(xd, rate, 42, mask, out).ok());
  ASSERT_TRUE(gpu_->Dropout(xd, rate, 42, mask2, out2).ok());
  ASSERT_TRUE(gpu_->Dropout(xd, rate, 43, mask3, out3).ok());
  Tensor m = Host(mask), o = Host(out);
  EXPECT_TRUE(Host(mask2).Equals(m));
  EXPECT_FALSE(Host(mask3).Equals(m));
  int64_t dropped = 0;
  const float scale = 1.0f / (1.0f - rate);
  for (int64_t i = 0; i < n; ++i) {
    const float v = m.flat<float>()[i];
    ASSERT_TRUE(v == 0.0f || v == scale) << v;
    dropped += v == 0.0f;
    ASSERT_EQ(o.flat<float>()[i], x.flat<float>()[i] * v);
  }
  EXPECT_NEAR(static_cast<double>(dropped) / n, rate, 0.01);
  // The CPU draws the same mask from the same seed (train/backend/dropout_draw.h).
  Tensor cpu_mask(DType::kFloat32, Shape{n}), cpu_out(DType::kFloat32, Shape{n});
  ASSERT_TRUE(cpu_.Dropout(x, rate, 42, cpu_mask, cpu_out).ok());
  EXPECT_TRUE(cpu_mask.Equals(m));
  EXPECT_TRUE(cpu_out.Equals(o));
}

TEST_F(CudaBackendTest, ReduceMatchesCpuOnEveryPattern) {
  struct Case {
    Shape shape;
    std::vector<bool> reduced;
  };
  const std::vector<Case> cases = {
      {{64, 256}, {true, false}},
      {{64, 256}, {false, true}},
      {{4, 5, 6, 7}, {true, false, true, false}},
      {{4, 5, 6, 7}, {false, true, false, true}},
      {{4, 5, 6, 7}, {true, true, true, true}},
      {{4, 5, 6, 7}, {false, false, false, false}},
      {{4096, 64}, {true, false}},
      {{3, 5000, 40}, {false, true, false}},
      {{100000}, {true}},
      {{2, 1, 3}, {false, true, true}},
      // Few outputs of many elements each: cut into slices (GenericSplits), strided or not.
      {{3, 300000}, {false, true}},
      {{2, 3, 50000, 2}, {true, false, true, false}},
      {{1000, 700}, {true, true}},
  };
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(c.shape.DebugString() + " op " + std::to_string(static_cast<int>(op)));
      Shape out_shape;
      int64_t count = 1;
      for (int d = 0; d < c.shape.rank(); ++d) {
        out_shape.AddDim(c.reduced[d] ? 1 : c.shape.dim(d));
        if (c.reduced[d]) count *= c.shape.dim(d);
      }
      Tensor x = Random(c.shape, 90);
      const float scale = 1.0f / static_cast<float>(count);
      Tensor want(DType::kFloat32, out_shape);
      ASSERT_TRUE(cpu_.Reduce(op, x, c.reduced, scale, want).ok());
      Tensor got = DevEmpty(out_shape);
      absl::Status s = gpu_->Reduce(op, Dev(x), c.reduced, scale, got);
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_TRUE(AllClose(Host(got), want, 1e-5f, 1e-4f));
    }
  }
}

// A NaN wins a max and stays, as on the CPU (CpuBackendTest.MaxPropagatesNaN): each thread's max
// kept it, but the warp step (fmaxf) dropped it again, so [NaN, 1] gave 1 and [NaN] -inf. Every
// kernel path: one block per output, columns, and slices of a long reduction.
TEST_F(CudaBackendTest, MaxPropagatesNaNOnEveryPath) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    Shape shape;
    std::vector<bool> reduced;
    int64_t nan_at;
  };
  const std::vector<Case> cases = {
      {{2}, {true}, 0},
      {{2}, {true}, 1},
      {{1}, {true}, 0},
      {{2, 2}, {true, false}, 1},
      {{64, 256}, {false, true}, 5 * 256 + 77},
      {{64, 256}, {true, false}, 9 * 256 + 3},
      {{3, 300000}, {false, true}, 300000 + 123456},
      {{1000, 700}, {true, true}, 654321},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.shape.DebugString() + " NaN at " + std::to_string(c.nan_at));
    Shape out_shape;
    for (int d = 0; d < c.shape.rank(); ++d) out_shape.AddDim(c.reduced[d] ? 1 : c.shape.dim(d));
    Tensor x = Random(c.shape, 91);
    x.flat<float>()[c.nan_at] = nan;
    Tensor want(DType::kFloat32, out_shape);
    ASSERT_TRUE(cpu_.Reduce(ReduceOp::kMax, x, c.reduced, 1.0f, want).ok());
    Tensor got = DevEmpty(out_shape);
    ASSERT_TRUE(gpu_->Reduce(ReduceOp::kMax, Dev(x), c.reduced, 1.0f, got).ok());
    const Tensor host = Host(got);
    int nans = 0;
    for (int64_t k = 0; k < want.num_elements(); ++k) {
      const float w = want.data<float>()[k], g = host.data<float>()[k];
      nans += std::isnan(w);
      if (std::isnan(w)) {
        EXPECT_TRUE(std::isnan(g)) << "output " << k << ": " << g;
      } else {
        EXPECT_EQ(g, w) << "output " << k;
      }
    }
    EXPECT_EQ(nans, 1);
  }
}

// A NaN stays NaN through a ReLU (alone, in a residual add, after a bias) and a max pool, as on
// the CPU and in PyTorch: each made it 0 or dropped it, hiding a NaN input from the loss.
TEST_F(CudaBackendTest, ReluAndMaxPoolKeepNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Random({1, 3, 3, 2}, 92);
  x.flat<float>()[0] = nan;
  Tensor y = DevEmpty(x.shape());
  ASSERT_TRUE(gpu_->Unary(UnaryOp::kRelu, Dev(x), y).ok());
  EXPECT_TRUE(std::isnan(Host(y).data<float>()[0]));
  ASSERT_TRUE(gpu_->AddRelu(Dev(x), Dev(Random(x.shape(), 93)), y).ok());
  EXPECT_TRUE(std::isnan(Host(y).data<float>()[0]));
  Tensor mm = DevEmpty({2, 1});
  Tensor a(DType::kFloat32, Shape{2, 2});
  a.flat<float>()[0] = nan, a.flat<float>()[1] = 1, a.flat<float>()[2] = -3, a.flat<float>()[3] = 1;
  Tensor ones(DType::kFloat32, Shape{2, 1}), zero(DType::kFloat32, Shape{1});
  ones.flat<float>()[0] = ones.flat<float>()[1] = 1, zero.flat<float>()[0] = 0;
  ASSERT_TRUE(gpu_->MatMulBias(Dev(a), Dev(ones), Dev(zero), true, mm).ok());
  EXPECT_TRUE(std::isnan(Host(mm).data<float>()[0]));
  EXPECT_EQ(Host(mm).data<float>()[1], 0.0f);
  // A 2x2 max pool of the 3x3 image, stride 1: the windows over pixel (0, 0) are NaN, whatever
  // its place in them; channel 1 has none.
  PoolGeometry g;
  g.algorithm = PoolAlgorithm::kMax;
  g.n = 1, g.h = 3, g.w = 3, g.c = 2, g.window_h = g.window_w = 2, g.stride_h = g.stride_w = 1;
  g.oh = g.ow = 2;
  Tensor pooled = DevEmpty({1, 2, 2, 2});
  ASSERT_TRUE(gpu_->Pool2DForward(g, Dev(x), pooled).ok());
  const Tensor host = Host(pooled);
  EXPECT_TRUE(std::isnan(host.data<float>()[0]));  // window (0, 0), channel 0
  for (int64_t k = 1; k < 8; ++k) EXPECT_FALSE(std::isnan(host.data<float>()[k])) << k;
}

TEST_F(CudaBackendTest, BroadcastToAndReduceMaxBackwardMatchCpu) {
  Tensor in = Random({4, 1, 6}, 100);
  Tensor want(DType::kFloat32, Shape{4, 5, 6});
  ASSERT_TRUE(cpu_.BroadcastTo(in, 0.5f, want).ok());
  Tensor got = DevEmpty({4, 5, 6});
  ASSERT_TRUE(gpu_->BroadcastTo(Dev(in), 0.5f, got).ok());
  EXPECT_TRUE(AllClose(Host(got), want, 0, 0));

  // Small integers make ties, split evenly between the maxima.
  Tensor x(DType::kFloat32, Shape{6, 8});
  std::mt19937 rng(7);
  for (float& v : x.flat<float>()) v = static_cast<float>(rng() % 3);
  Tensor max(DType::kFloat32, Shape{1, 8});
  ASSERT_TRUE(cpu_.Reduce(ReduceOp::kMax, x, {true, false}, 1.0f, max).ok());
  Tensor g = Random({1, 8}, 101);
  Tensor dx(DType::kFloat32, x.shape());
  ASSERT_TRUE(cpu_.ReduceMaxBackward(x, max, g, dx).ok());
  Tensor gdx = DevEmpty(x.shape());
  ASSERT_TRUE(gpu_->ReduceMaxBackward(Dev(x), Dev(max), Dev(g), gdx).ok());
  EXPECT_TRUE(AllClose(Host(gdx), dx, 1e-6f, 1e-6f));
}

TEST_F(CudaBackendTest, TransposeConcatSplitMatchCpu) {
  Tensor x = Random({3, 4, 5, 6}, 110);
  for (const std::vector<int>& perm :
       {std::vector<int>{0, 1, 2, 3}, {3, 2, 1, 0}, {0, 2, 3, 1}, {1, 0, 3, 2}, {3, 0, 1, 2}}) {
    Shape out_shape;
    for (int p : perm) out_shape.AddDim(x.dim(p));
    Tensor want(DType::kFloat32, out_shape);
    ASSERT_TRUE(cpu_.Transpose(x, perm, want).ok());
    Tensor got = DevEmpty(out_shape);
    ASSERT_TRUE(gpu_->Transpose(Dev(x), perm, got).ok());
    EXPECT_TRUE(Host(got).Equals(want));
  }
  for (int axis : {0, 1, 2}) {
    Shape sa{2, 3, 4}, sb{2, 3, 4};
    Shape whole{2, 3, 4};
    // Parts of sizes 1 and 2 (and the whole 3) along `axis`.
    std::vector<int64_t> da = {2, 3, 4}, db = {2, 3, 4};
    da[axis] = 1;
    db[axis] = (axis == 0 ? 2 : axis == 1 ? 3 : 4) - 1 + 1;
    Shape a_shape{da[0], da[1], da[2]}, b_shape{db[0], db[1], db[2]};
    std::vector<int64_t> dw = {da[0], da[1], da[2]};
    dw[axis] = da[axis] + db[axis];
    Shape w_shape{dw[0], dw[1], dw[2]};
    Tensor a = Random(a_shape, 120 + axis), b = Random(b_shape, 130 + axis);
    Tensor want(DType::kFloat32, w_shape);
    ASSERT_TRUE(cpu_.Concat({a, b}, axis, want).ok());
    Tensor got = DevEmpty(w_shape);
    ASSERT_TRUE(gpu_->Concat({Dev(a), Dev(b)}, axis, got).ok());
    EXPECT_TRUE(Host(got).Equals(want)) << axis;
    std::vector<Tensor> parts = {DevEmpty(a_shape), DevEmpty(b_shape)};
    ASSERT_TRUE(gpu_->Split(got, axis, parts).ok());
    EXPECT_TRUE(Host(parts[0]).Equals(a)) << axis;
    EXPECT_TRUE(Host(parts[1]).Equals(b)) << axis;
  }
}

// Sums whose threads each add thousands of values in sequence (too many outputs or column blocks
// to cut the rows into slices): a float running sum of 16,384 values of 0.1 is 1.5e-4 off; the
// threads' sums are doubles, as the CPU's block sums. Filled on the device; the exact sum is
// known. 5 GiB, then 4 GiB.
TEST_F(CudaBackendTest, LongSequentialSumsStayAccurate) {
  const double tenth = 0.1f;
  {
    const int64_t r = int64_t{1} << 22;  // 300 outputs: one block each, 16,384 values a thread
    Tensor x = DevEmpty({300, r}), out = DevEmpty({300, 1});
    ASSERT_TRUE(gpu_->Fill(x, 0.1f).ok());
    ASSERT_TRUE(gpu_->Reduce(ReduceOp::kSum, x, {false, true}, 1.0f, out).ok());
    const Tensor sums = Host(out);
    for (float v : sums.flat<float>()) ASSERT_NEAR(v, tenth * r, 1e-6 * tenth * r);
  }
  {
    const int64_t n = int64_t{1} << 15;  // 1,024 column blocks: 4,096 values a thread
    Tensor x = DevEmpty({n, n}), out = DevEmpty({1, n});
    ASSERT_TRUE(gpu_->Fill(x, 0.1f).ok());
    ASSERT_TRUE(gpu_->Reduce(ReduceOp::kSum, x, {true, false}, 1.0f, out).ok());
    const Tensor sums = Host(out);
    for (float v : sums.flat<float>()) ASSERT_NEAR(v, tenth * n, 1e-6 * tenth * n);
  }
}

// Rows longer than a 2-D copy's largest pitch (2^31 - 1 bytes): [2, 2^29 + 1] floats, 4 GiB,
// copied a row at a time. Checked on the device: each row's extremes, whole and split.
TEST_F(CudaBackendTest, ConcatAndSplitOfRowsPastTheLargestPitch) {
  const int64_t wide = int64_t{1} << 29;
  Tensor a = DevEmpty({2, wide}), b = DevEmpty({2, 1}), whole = DevEmpty({2, wide + 1});
  ASSERT_TRUE(gpu_->Fill(a, 1.0f).ok() && gpu_->Fill(b, 2.0f).ok());
  ASSERT_TRUE(gpu_->Concat({a, b}, 1, whole).ok());
  // Each row's max, and its min as -max(-t).
  auto row_max = [&](const Tensor& t, float sign) {
    Tensor r = DevEmpty({2, 1}), signed_t = DevEmpty(t.shape());
    EXPECT_TRUE(gpu_->Fill(signed_t, 0.0f).ok());
    EXPECT_TRUE(gpu_->Axpby(sign, t, 1.0f, signed_t).ok());
    EXPECT_TRUE(gpu_->Reduce(ReduceOp::kMax, signed_t, {false, true}, sign, r).ok());
    const Tensor host = Host(r);
    return std::vector<float>(host.flat<float>().begin(), host.flat<float>().end());
  };
  EXPECT_THAT(row_max(whole, 1.0f), ::testing::ElementsAre(2.0f, 2.0f));
  EXPECT_THAT(row_max(whole, -1.0f), ::testing::ElementsAre(1.0f, 1.0f));  // the min
  ASSERT_TRUE(gpu_->Fill(a, 0.0f).ok() && gpu_->Fill(b, 0.0f).ok());
  std::vector<Tensor> parts = {a, b};
  ASSERT_TRUE(gpu_->Split(whole, 1, parts).ok());
  EXPECT_THAT(Host(b).flat<float>(), ::testing::ElementsAre(2.0f, 2.0f));
  EXPECT_THAT(row_max(a, 1.0f), ::testing::ElementsAre(1.0f, 1.0f));
  EXPECT_THAT(row_max(a, -1.0f), ::testing::ElementsAre(1.0f, 1.0f));
}

TEST_F(CudaBackendTest, SoftmaxAndCrossEntropyMatchCpu) {
  for (const Shape& shape : {Shape{64, 10}, Shape{7, 1000}, Shape{3, 4, 33}}) {
    Tensor x = Random(shape, 140, -5.0f, 5.0f), g = Random(shape, 141);
    Tensor y(DType::kFloat32, shape), dx(DType::kFloat32, shape);
    ASSERT_TRUE(cpu_.Softmax(x, y).ok());
    ASSERT_TRUE(cpu_.SoftmaxBackward(y, g, dx).ok());
    Tensor gy = DevEmpty(shape), gdx = DevEmpty(shape);
    ASSERT_TRUE(gpu_->Softmax(Dev(x), gy).ok());
    ASSERT_TRUE(gpu_->SoftmaxBackward(gy, Dev(g), gdx).ok());
    EXPECT_TRUE(AllClose(Host(gy), y, 1e-6f, 1e-4f)) << shape.DebugString();
    EXPECT_TRUE(AllClose(Host(gdx), dx, 1e-6f, 1e-4f)) << shape.DebugString();
  }
  const int64_t n = 50, c = 12;
  Tensor logits = Random({n, c}, 150, -4.0f, 4.0f), grad_loss = Random({n}, 151);
  Tensor labels(DType::kInt64, Shape{n});
  for (int64_t i = 0; i < n; ++i) labels.flat<int64_t>()[i] = (i * 7) % c;
  Tensor loss(DType::kFloat32, Shape{n}), probs(DType::kFloat32, Shape{n, c}),
      dl(DType::kFloat32, Shape{n, c});
  ASSERT_TRUE(cpu_.SparseSoftmaxCrossEntropy(logits, labels, loss, probs, 1.0f, nullptr).ok());
  ASSERT_TRUE(cpu_.SparseSoftmaxCrossEntropyBackward(probs, labels, grad_loss, 1.0f, dl).ok());
  Tensor ld = Dev(labels), gloss = DevEmpty({n}), gprobs = DevEmpty({n, c}), gdl = DevEmpty({n, c});
  ASSERT_TRUE(gpu_->SparseSoftmaxCrossEntropy(Dev(logits), ld, gloss, gprobs, 1.0f, nullptr).ok());
  ASSERT_TRUE(gpu_->SparseSoftmaxCrossEntropyBackward(gprobs, ld, Dev(grad_loss), 1.0f, gdl).ok());
  EXPECT_TRUE(AllClose(Host(gloss), loss, 1e-5f, 1e-5f));
  EXPECT_TRUE(AllClose(Host(gprobs), probs, 1e-6f, 1e-4f));
  EXPECT_TRUE(AllClose(Host(gdl), dl, 1e-6f, 1e-4f));
}

// A confident row's loss is tiny next to its largest logit: m + log(sum) - x[label] in float
// rounded log(sum) to the spacing of floats near m ([1000, 990]: 6.1e-5 for 4.54e-5). The device
// sums the exponentials in float (the CPU in double), so log(1 + 4.5e-5) is good to float's spacing
// near 1, 1.2e-7: the tolerance is absolute.
TEST_F(CudaBackendTest, CrossEntropyOfConfidentRowsMatchesCpu) {
  Tensor logits(DType::kFloat32, Shape{4, 2});
  const float values[] = {1000, 990, 100, 90, 20, 10, -3, 5};
  std::copy(std::begin(values), std::end(values), logits.flat<float>().begin());
  Tensor labels(DType::kInt64, Shape{4});
  for (int64_t i = 0; i < 4; ++i) labels.flat<int64_t>()[i] = i == 3 ? 1 : 0;
  Tensor loss(DType::kFloat32, Shape{4}), probs(DType::kFloat32, Shape{4, 2});
  ASSERT_TRUE(cpu_.SparseSoftmaxCrossEntropy(logits, labels, loss, probs, 1.0f, nullptr).ok());
  Tensor gloss = DevEmpty({4}), gprobs = DevEmpty({4, 2});
  ASSERT_TRUE(
      gpu_->SparseSoftmaxCrossEntropy(Dev(logits), Dev(labels), gloss, gprobs, 1.0f, nullptr).ok());
  EXPECT_TRUE(AllClose(Host(gloss), loss, 2e-7f, 1e-5f));
}

// The loss's reduction in its kernel, its one-gradient backward, and a metric's AccumulateSum:
// each against the CPU (the sums are added in another order on the device: a tolerance).
TEST_F(CudaBackendTest, FusedLossAndMetricReductionsMatchCpu) {
  // 40,000: 120,000 values, past kGenericSplitMin: summed in slices (two launches).
  for (const int64_t n : {1, 64, 3000, 40000}) {
    const int64_t c = 10;
    const float scale = 1.0f / static_cast<float>(n);
    Tensor logits = Random({n, c}, 160, -4.0f, 4.0f), g = Random({1}, 161);
    Tensor labels(DType::kInt64, Shape{n});
    for (int64_t i = 0; i < n; ++i) labels.flat<int64_t>()[i] = (i * 3) % c;
    Tensor loss(DType::kFloat32, Shape{n}), probs(DType::kFloat32, Shape{n, c}),
        mean(DType::kFloat32, Shape{1}), dl(DType::kFloat32, Shape{n, c});
    ASSERT_TRUE(cpu_.SparseSoftmaxCrossEntropy(logits, labels, loss, probs, scale, &mean).ok());
    ASSERT_TRUE(cpu_.SparseSoftmaxCrossEntropyBackward(probs, labels, g, scale, dl).ok());
    Tensor ld = Dev(labels), gloss = DevEmpty({n}), gprobs = DevEmpty({n, c}),
           gmean = DevEmpty({1}), gdl = DevEmpty({n, c});
    ASSERT_TRUE(
        gpu_->SparseSoftmaxCrossEntropy(Dev(logits), ld, gloss, gprobs, scale, &gmean).ok());
    ASSERT_TRUE(gpu_->SparseSoftmaxCrossEntropyBackward(gprobs, ld, Dev(g), scale, gdl).ok());
    EXPECT_TRUE(AllClose(Host(gmean), mean, 1e-5f, 1e-5f)) << n;
    EXPECT_TRUE(AllClose(Host(gdl), dl, 1e-7f, 1e-4f)) << n;

    // total += scale * sum, twice: the running total carries over.
    Tensor values = Random({n, 3}, 162), total(DType::kFloat32, Shape{1});
    total.flat<float>()[0] = 2.5f;
    Tensor gtotal = Dev(total);
    for (int k = 0; k < 2; ++k) {
      ASSERT_TRUE(cpu_.AccumulateSum(values, 0.5f, total).ok());
      ASSERT_TRUE(gpu_->AccumulateSum(Dev(values), 0.5f, gtotal).ok());
    }
    EXPECT_TRUE(AllClose(Host(gtotal), total, 1e-5f, 1e-5f)) << n;
    // The bits of Reduce then Axpby on this device, as AccumulateSum's contract says.
    Tensor fused = DevEmpty({1}), sum = DevEmpty({1, 1}), unfused = DevEmpty({1});
    ASSERT_TRUE(gpu_->Fill(fused, 2.5f).ok() && gpu_->Fill(unfused, 2.5f).ok());
    ASSERT_TRUE(gpu_->AccumulateSum(Dev(values), 0.5f, fused).ok());
    ASSERT_TRUE(gpu_->Reduce(ReduceOp::kSum, Dev(values), {true, true}, 0.5f, sum).ok());
    ASSERT_TRUE(gpu_->Axpby(1.0f, *sum.Reshape(Shape{1}), 1.0f, unfused).ok());
    EXPECT_EQ(Host(fused).flat<float>()[0], Host(unfused).flat<float>()[0]) << n;
  }
  // An empty batch adds nothing.
  Tensor total(DType::kFloat32, Shape{1});
  total.flat<float>()[0] = 7.0f;
  Tensor gtotal = Dev(total);
  ASSERT_TRUE(gpu_->AccumulateSum(DevEmpty({0}), 1.0f, gtotal).ok());
  EXPECT_EQ(Host(gtotal).flat<float>()[0], 7.0f);
}

// An optimizer update's step scalars on the host (backend::StepScalar): rate, decay, Nadam's two.
Tensor StepScalars(float rate, float decay, float gradient_coefficient = 0, float v_scale = 0) {
  Tensor s(DType::kFloat32, Shape{4});
  float* p = s.data<float>();
  p[0] = rate, p[1] = decay, p[2] = gradient_coefficient, p[3] = v_scale;
  return s;
}

TEST_F(CudaBackendTest, OptimizerUpdatesMatchCpuOverSteps) {
  const Shape shape{1000, 17};
  struct Sgd {
    float momentum;
    bool nesterov;
    float decay;
  };
  for (const Sgd& o : {Sgd{0, false, 0}, Sgd{0.9f, false, 0}, Sgd{0.9f, true, 1e-2f}}) {
    Tensor w = Random(shape, 160), v = Tensor::Zeros(DType::kFloat32, shape);
    Tensor wd = Dev(w), vd = Dev(v);
    for (int step = 0; step < 3; ++step) {
      Tensor g = Random(shape, 170 + step);
      const Tensor s = StepScalars(0.1f, 0.1f * o.decay);
      ASSERT_TRUE(cpu_.SgdUpdate(w, g, &v, s, o.momentum, o.nesterov).ok());
      ASSERT_TRUE(gpu_->SgdUpdate(wd, Dev(g), &vd, Dev(s), o.momentum, o.nesterov).ok());
    }
    EXPECT_TRUE(AllClose(Host(wd), w, 1e-6f, 1e-5f)) << o.momentum << o.nesterov;
    if (o.momentum != 0) {
      EXPECT_TRUE(AllClose(Host(vd), v, 1e-6f, 1e-5f));
    }
  }
  Tensor w = Random(shape, 180), m = Tensor::Zeros(DType::kFloat32, shape),
         v = Tensor::Zeros(DType::kFloat32, shape);
  Tensor wd = Dev(w), md = Dev(m), vd = Dev(v);
  for (int step = 1; step <= 3; ++step) {
    Tensor g = Random(shape, 190 + step);
    const float alpha = 1e-3f * std::sqrt(1 - std::pow(0.999f, step)) / (1 - std::pow(0.9f, step));
    // Step 2 decays the weights too (AdamW).
    const float decay = step == 2 ? 4e-6f : 0.0f;
    const Tensor s = StepScalars(alpha, decay);
    ASSERT_TRUE(cpu_.AdamUpdate(w, g, m, v, s, 0.9f, 0.999f, 1e-7f).ok());
    ASSERT_TRUE(gpu_->AdamUpdate(wd, Dev(g), md, vd, Dev(s), 0.9f, 0.999f, 1e-7f).ok());
  }
  EXPECT_TRUE(AllClose(Host(wd), w, 1e-6f, 1e-5f));
  EXPECT_TRUE(AllClose(Host(md), m, 1e-6f, 1e-5f));
  EXPECT_TRUE(AllClose(Host(vd), v, 1e-7f, 1e-5f));
}

// RMSprop (plain, and with momentum, centered and decay), Adagrad, Adadelta, Adamax and Nadam,
// three steps each with decay on the second.
TEST_F(CudaBackendTest, KerasOptimizerUpdatesMatchCpuOverSteps) {
  const Shape shape{1000, 17};
  auto zeros = [&] { return Tensor::Zeros(DType::kFloat32, shape); };
  for (const bool full : {false, true}) {
    Tensor w = Random(shape, 300), v = zeros(), a = zeros(), b = zeros();
    Tensor wd = Dev(w), vd = Dev(v), ad = Dev(a), bd = Dev(b);
    const float momentum = full ? 0.9f : 0.0f;
    for (int step = 1; step <= 3; ++step) {
      Tensor g = Random(shape, 310 + step);
      const float decay = step == 2 ? 1e-3f : 0.0f;
      const Tensor s = StepScalars(1e-2f, decay);
      ASSERT_TRUE(cpu_.RmspropUpdate(w, g, v, full ? &a : nullptr, full ? &b : nullptr, s, 0.9f,
                                     momentum, 1e-7f)
                      .ok());
      ASSERT_TRUE(gpu_->RmspropUpdate(wd, Dev(g), vd, full ? &ad : nullptr, full ? &bd : nullptr,
                                      Dev(s), 0.9f, momentum, 1e-7f)
                      .ok());
    }
    EXPECT_TRUE(AllClose(Host(wd), w, 1e-6f, 1e-5f)) << full;
    EXPECT_TRUE(AllClose(Host(vd), v, 1e-7f, 1e-5f)) << full;
    EXPECT_TRUE(AllClose(Host(ad), a, 1e-7f, 1e-5f)) << full;
    EXPECT_TRUE(AllClose(Host(bd), b, 1e-6f, 1e-5f)) << full;
  }
  Tensor w = Random(shape, 320), s1 = zeros(), s2 = zeros();
  ASSERT_TRUE(cpu_.Fill(s1, 0.1f).ok());
  Tensor wd = Dev(w), s1d = Dev(s1), s2d = Dev(s2);
  for (int step = 1; step <= 3; ++step) {
    Tensor g = Random(shape, 330 + step);
    const float decay = step == 2 ? 1e-3f : 0.0f;
    const Tensor s = StepScalars(0.1f, decay);
    ASSERT_TRUE(cpu_.AdagradUpdate(w, g, s1, s, 1e-7f).ok());
    ASSERT_TRUE(gpu_->AdagradUpdate(wd, Dev(g), s1d, Dev(s), 1e-7f).ok());
  }
  EXPECT_TRUE(AllClose(Host(wd), w, 1e-6f, 1e-5f));
  EXPECT_TRUE(AllClose(Host(s1d), s1, 1e-6f, 1e-5f));
  w = Random(shape, 340), s1 = zeros(), s2 = zeros();
  wd = Dev(w), s1d = Dev(s1), s2d = Dev(s2);
  for (int step = 1; step <= 3; ++step) {
    Tensor g = Random(shape, 350 + step);
    const float decay = step == 2 ? 1e-3f : 0.0f;
    const Tensor s = StepScalars(1.0f, decay);
    ASSERT_TRUE(cpu_.AdadeltaUpdate(w, g, s1, s2, s, 0.95f, 1e-7f).ok());
    ASSERT_TRUE(gpu_->AdadeltaUpdate(wd, Dev(g), s1d, s2d, Dev(s), 0.95f, 1e-7f).ok());
  }
  EXPECT_TRUE(AllClose(Host(wd), w, 1e-6f, 1e-5f));
  EXPECT_TRUE(AllClose(Host(s1d), s1, 1e-7f, 1e-5f));
  EXPECT_TRUE(AllClose(Host(s2d), s2, 1e-10f, 1e-4f));
  w = Random(shape, 360), s1 = zeros(), s2 = zeros();
  wd = Dev(w), s1d = Dev(s1), s2d = Dev(s2);
  for (int step = 1; step <= 3; ++step) {
    Tensor g = Random(shape, 370 + step);
    const float decay = step == 2 ? 1e-3f : 0.0f;
    const float alpha = 1e-2f / (1 - std::pow(0.9f, step));
    const Tensor s = StepScalars(alpha, decay);
    ASSERT_TRUE(cpu_.AdamaxUpdate(w, g, s1, s2, s, 0.9f, 0.999f, 1e-7f).ok());
    ASSERT_TRUE(gpu_->AdamaxUpdate(wd, Dev(g), s1d, s2d, Dev(s), 0.9f, 0.999f, 1e-7f).ok());
  }
  EXPECT_TRUE(AllClose(Host(wd), w, 1e-6f, 1e-5f));
  EXPECT_TRUE(AllClose(Host(s1d), s1, 1e-6f, 1e-5f));
  EXPECT_TRUE(AllClose(Host(s2d), s2, 1e-6f, 1e-5f));
  w = Random(shape, 380), s1 = zeros(), s2 = zeros();
  wd = Dev(w), s1d = Dev(s1), s2d = Dev(s2);
  for (int step = 1; step <= 3; ++step) {
    Tensor g = Random(shape, 390 + step);
    const float decay = step == 2 ? 1e-3f : 0.0f;
    // Coefficients of the size Nadam passes (nadam.cc); the kernels need not know where from.
    const float cm = 1e-2f * 0.8f, cg = 1e-2f * 0.5f, v_scale = 1 / (1 - std::pow(0.999f, step));
    const Tensor s = StepScalars(cm, decay, cg, v_scale);
    ASSERT_TRUE(cpu_.NadamUpdate(w, g, s1, s2, s, 0.9f, 0.999f, 1e-7f).ok());
    ASSERT_TRUE(gpu_->NadamUpdate(wd, Dev(g), s1d, s2d, Dev(s), 0.9f, 0.999f, 1e-7f).ok());
  }
  EXPECT_TRUE(AllClose(Host(wd), w, 1e-6f, 1e-5f));
  EXPECT_TRUE(AllClose(Host(s1d), s1, 1e-6f, 1e-5f));
  EXPECT_TRUE(AllClose(Host(s2d), s2, 1e-7f, 1e-5f));
}

// One update over 150 variables (three launches of at most 72; sizes from 0 to past a block's
// piece of 2,048 elements, so that some variables span many blocks) matches the CPU's, for the
// rules with the most slots and branches, over two steps.
TEST_F(CudaBackendTest, OptimizerUpdateOfManyVariablesMatchesCpu) {
  using train::backend::UpdateKind;
  using train::backend::UpdateOperands;
  using train::backend::UpdateRule;
  const std::vector<UpdateRule> rules = {
      {.kind = UpdateKind::kSgd, .momentum = 0.9f, .nesterov = true},
      {.kind = UpdateKind::kAdam, .beta_1 = 0.9f, .beta_2 = 0.999f, .epsilon = 1e-7f},
      {.kind = UpdateKind::kRmsprop,
       .momentum = 0.5f,
       .rho = 0.9f,
       .centered = true,
       .epsilon = 1e-7f},
      {.kind = UpdateKind::kNadam, .beta_1 = 0.9f, .beta_2 = 0.999f, .epsilon = 1e-7f},
  };
  constexpr int kVariables = 150;
  for (const UpdateRule& rule : rules) {
    SCOPED_TRACE(train::backend::UpdateName(rule.kind));
    // Per variable: w and its three slots, on the host and on the device.
    std::vector<std::vector<Tensor>> host(kVariables), device(kVariables);
    for (int i = 0; i < kVariables; ++i) {
      const int64_t n = (i * 977) % 6000;  // 0 for the first
      for (int k = 0; k < 4; ++k) {
        // Slots positive; slot 1 (RMSprop's average gradient) small enough that its square
        // stays under the velocity's, so that sqrt(v - a^2 + epsilon) is a number.
        host[i].push_back(
            Random({n}, 1000 + 4 * i + k, k == 0 ? -1.0f : 0.01f, k == 2 ? 0.05f : 1.0f));
        device[i].push_back(Dev(host[i].back()));
      }
    }
    for (int step = 1; step <= 2; ++step) {
      const Tensor s = StepScalars(1e-2f, step == 2 ? 1e-3f : 0.0f, 5e-3f, 1.5f), sd = Dev(s);
      std::vector<Tensor> grads, grads_d;
      for (int i = 0; i < kVariables; ++i) {
        grads.push_back(Random(host[i][0].shape(), 5000 + 100 * step + i));
        grads_d.push_back(Dev(grads.back()));
      }
      std::vector<UpdateOperands> on_cpu(kVariables), on_gpu(kVariables);
      for (int i = 0; i < kVariables; ++i) {
        on_cpu[i] = {.w = &host[i][0], .g = &grads[i]};
        on_gpu[i] = {.w = &device[i][0], .g = &grads_d[i]};
        for (int j = 0; j < train::backend::kMaxUpdateSlots; ++j) {
          if (!train::backend::UpdateUsesSlot(rule, j)) continue;
          on_cpu[i].slots[j] = &host[i][1 + j];
          on_gpu[i].slots[j] = &device[i][1 + j];
        }
      }
      ASSERT_TRUE(cpu_.OptimizerUpdate(rule, on_cpu, s).ok());
      const absl::Status status = gpu_->OptimizerUpdate(rule, on_gpu, sd);
      ASSERT_TRUE(status.ok()) << status;
    }
    for (int i = 0; i < kVariables; ++i) {
      for (int k = 0; k < 4; ++k) {
        EXPECT_TRUE(AllClose(Host(device[i][k]), host[i][k], 1e-6f, 1e-5f))
            << "variable " << i << " tensor " << k;
      }
    }
  }
}

TEST_F(CudaBackendTest, AxpbyLabelsAndInTopKMatchCpu) {
  const Shape shape{300, 7};
  Tensor x = Random(shape, 210), y = Random(shape, 211);
  Tensor yd = Dev(y);
  ASSERT_TRUE(cpu_.Axpby(0.3f, x, 0.7f, y).ok());
  ASSERT_TRUE(gpu_->Axpby(0.3f, Dev(x), 0.7f, yd).ok());
  EXPECT_TRUE(AllClose(Host(yd), y, 1e-6f, 1e-6f));

  std::vector<int32_t> raw(300);
  for (int i = 0; i < 300; ++i) raw[i] = i % 11 - 2;  // some below 0, some >= 7
  const Tensor labels = Tensor::FromVector(raw);
  Tensor l64(DType::kInt64, Shape{300}), bad(DType::kFloat32, Shape{1});
  ASSERT_TRUE(cpu_.CastLabels(labels, 7, l64, bad).ok());
  absl::StatusOr<Tensor> l64d = gpu_->Allocate(DType::kInt64, Shape{300});
  absl::StatusOr<Tensor> badd = gpu_->Allocate(DType::kFloat32, Shape{1});
  ASSERT_TRUE(l64d.ok() && badd.ok());
  ASSERT_TRUE(gpu_->CastLabels(Dev(labels), 7, *l64d, *badd).ok());
  Tensor l64h(DType::kInt64, Shape{300}), badh(DType::kFloat32, Shape{1});
  ASSERT_TRUE(gpu_->Copy(*l64d, l64h).ok());
  ASSERT_TRUE(gpu_->Copy(*badd, badh).ok());
  EXPECT_TRUE(l64h.Equals(l64));
  EXPECT_EQ(badh.data<float>()[0], bad.data<float>()[0]);

  const Tensor predictions = Random(shape, 212);
  for (bool first_max_only : {false, true}) {
    for (int k : {1, 3}) {
      if (first_max_only && k != 1) continue;
      Tensor hits(DType::kFloat32, Shape{300});
      ASSERT_TRUE(cpu_.InTopK(predictions, labels, k, first_max_only, hits).ok());
      absl::StatusOr<Tensor> hitsd = gpu_->Allocate(DType::kFloat32, Shape{300});
      ASSERT_TRUE(hitsd.ok());
      ASSERT_TRUE(gpu_->InTopK(Dev(predictions), Dev(labels), k, first_max_only, *hitsd).ok());
      EXPECT_TRUE(Host(*hitsd).Equals(hits)) << k << first_max_only;
    }
  }
}

TEST_F(CudaBackendTest, MaximumTiesAndNaNMatchCpu) {
  // Ties go to a, and a NaN in either operand comes through, in the values and the gradients.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor a = *Tensor::FromVector<float>({1, 2, nan, 5}, Shape{4});
  const Tensor b = *Tensor::FromVector<float>({1, 3, 1, nan}, Shape{4});
  const Tensor g = *Tensor::FromVector<float>({1, 1, 1, 1}, Shape{4});
  for (BinaryOp op : {BinaryOp::kMaximum, BinaryOp::kMinimum}) {
    Tensor out(DType::kFloat32, Shape{4}), ga(DType::kFloat32, Shape{4}),
        gb(DType::kFloat32, Shape{4});
    ASSERT_TRUE(cpu_.Binary(op, a, b, out).ok());
    ASSERT_TRUE(cpu_.BinaryBackward(op, a, b, g, &ga, &gb).ok());
    Tensor ad = Dev(a), bd = Dev(b), outd = DevEmpty(Shape{4}), gad = DevEmpty(Shape{4}),
           gbd = DevEmpty(Shape{4});
    ASSERT_TRUE(gpu_->Binary(op, ad, bd, outd).ok());
    ASSERT_TRUE(gpu_->BinaryBackward(op, ad, bd, Dev(g), &gad, &gbd).ok());
    Tensor outh = Host(outd);
    for (int i = 0; i < 4; ++i) {
      const float want = out.data<float>()[i], got = outh.data<float>()[i];
      EXPECT_TRUE(std::isnan(want) ? std::isnan(got) : got == want) << i;
    }
    EXPECT_TRUE(Host(gad).Equals(ga));
    EXPECT_TRUE(Host(gbd).Equals(gb));
  }
}

TEST_F(CudaBackendTest, CastAndArgMaxMatchCpu) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor f =
      *Tensor::FromVector<float>({1.7f, -1.7f, 0.5f, nan, 3e9f, -3e9f, 1e20f, -0.0f}, Shape{2, 4});
  const Tensor i64 = *Tensor::FromVector<int64_t>({4294967297LL, -3, 16777217, 7}, Shape{4});
  const Tensor i32 = *Tensor::FromVector<int32_t>({-7, 9, 16777217, 0}, Shape{4});
  const DType types[] = {DType::kFloat32, DType::kInt32, DType::kInt64};
  for (const Tensor* x : {&f, &i64, &i32}) {
    for (DType to : types) {
      SCOPED_TRACE(std::string(DTypeName(x->dtype())) + " to " + std::string(DTypeName(to)));
      Tensor want(to, x->shape());
      ASSERT_TRUE(cpu_.Cast(*x, want).ok());
      Tensor got = DevEmpty(x->shape(), to);
      ASSERT_TRUE(gpu_->Cast(Dev(*x), got).ok());
      Tensor goth = Host(got);
      if (to == DType::kFloat32 && x->dtype() == DType::kFloat32) {
        for (int64_t i = 0; i < x->num_elements(); ++i) {
          const float w = want.data<float>()[i], g = goth.data<float>()[i];
          EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : g == w) << i;
        }
      } else {
        EXPECT_TRUE(goth.Equals(want));
      }
    }
  }
  // Rows with ties (the first wins) and a NaN (which wins).
  Tensor rows = Random({300, 7}, 220);
  rows.data<float>()[3] = rows.data<float>()[5] = 2.0f;
  rows.data<float>()[7 + 4] = nan;
  Tensor want(DType::kInt64, Shape{300});
  ASSERT_TRUE(cpu_.ArgMax(rows, want).ok());
  EXPECT_EQ(want.data<int64_t>()[0], 3);
  EXPECT_EQ(want.data<int64_t>()[1], 4);
  Tensor got = DevEmpty(Shape{300}, DType::kInt64);
  ASSERT_TRUE(gpu_->ArgMax(Dev(rows), got).ok());
  EXPECT_TRUE(Host(got).Equals(want));
}

TEST_F(CudaBackendTest, SteadyStateStepsDoNoDeviceAllocation) {
  // Conv forward and backward, as a training step would run them, twice: the
  // second pass is served entirely from the allocator's cache.
  const ConvGeometry g = Geometry(8, 16, 16, 8, 3, 16, 2, 1, 0, 1, 0, 1);
  Tensor x = Dev(Random({g.n, g.h, g.w, g.c}, 200)), f = Dev(Random({g.kh, g.kw, g.c, g.o}, 201));
  auto step = [&] {
    Tensor y = DevEmpty({g.n, g.oh, g.ow, g.o});
    ASSERT_TRUE(gpu_->Conv2DForward(g, x, f, y).ok());
    Tensor dx = DevEmpty(x.shape()), df = DevEmpty(f.shape());
    ASSERT_TRUE(gpu_->Conv2DBackwardData(g, y, f, dx).ok());
    ASSERT_TRUE(gpu_->Conv2DBackwardFilter(g, x, y, df).ok());
    ASSERT_TRUE(gpu_->Synchronize().ok());
  };
  step();
  const int64_t mallocs = gpu_->allocator().GetStats().device_allocations;
  for (int i = 0; i < 20; ++i) step();
  EXPECT_EQ(gpu_->allocator().GetStats().device_allocations, mallocs);
}

// The copy stream starts after the compute stream's queued work (Fill), and a kernel queued after
// WaitEvent sees the copied values: the events order both ways without a host wait.
TEST_F(CudaBackendTest, CopyAsyncIsOrderedByEventsBothWays) {
  const Shape shape{1 << 20};
  const Tensor values = Random(shape, 230);
  absl::StatusOr<Tensor> staging = gpu_->AllocateStaging(DType::kFloat32, shape);
  ASSERT_TRUE(staging.ok()) << staging.status();
  EXPECT_TRUE(staging->device().is_cpu());
  std::copy(values.data<float>(), values.data<float>() + shape.num_elements(),
            staging->data<float>());
  Tensor dst = DevEmpty(shape);
  ASSERT_TRUE(gpu_->Fill(dst, 7.0f).ok());  // queued first: the copy must land after it
  absl::StatusOr<std::shared_ptr<train::backend::Event>> copied = gpu_->CopyAsync(*staging, dst);
  ASSERT_TRUE(copied.ok()) << copied.status();
  ASSERT_TRUE(gpu_->WaitEvent(**copied).ok());
  Tensor out = DevEmpty(shape);
  ASSERT_TRUE(gpu_->Axpby(2.0f, dst, 0.0f, out).ok());  // reads dst after the copy
  Tensor want(DType::kFloat32, shape);
  for (int64_t i = 0; i < shape.num_elements(); ++i) {
    want.data<float>()[i] = 2.0f * values.data<float>()[i];
  }
  EXPECT_TRUE(AllClose(Host(out), want, 0, 0));
  EXPECT_TRUE((*copied)->Synchronize().ok());
  // Wrong operands are refused.
  EXPECT_FALSE(gpu_->CopyAsync(dst, out).ok());
}

}  // namespace
}  // namespace sluice::train::backend::cuda
