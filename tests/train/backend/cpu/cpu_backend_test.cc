#include "train/backend/cpu/cpu_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <xmmintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/float16.h"
#include "tests/train/gradient_check.h"
#include "train/backend/broadcast.h"
#include "train/backend/cpu/cpu_batch_norm_kernels.h"
#include "train/backend/cpu/cpu_threads.h"
#include "train/backend/cpu/dnnl_primitive_cache.h"
#include "train/backend/optimizer_update.h"

namespace sluice::train::backend::cpu {
namespace {

using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;

// The kernels are checked against the plain odometer loops of broadcast.h on
// shapes that take each fast path (same shape, row and column broadcast,
// scalars, tensors big enough to be split across threads) and the fallback.
class CpuBackendTest : public ::testing::Test {
 protected:
  void SetUp() override { SetCpuThreads(2); }
  void TearDown() override { SetCpuThreads(0); }
  CpuBackend& backend_ = CpuBackend::Get();
};

float Ref(BinaryOp op, float x, float y) {
  switch (op) {
    case BinaryOp::kAdd:
      return x + y;
    case BinaryOp::kSub:
      return x - y;
    case BinaryOp::kMul:
      return x * y;
    case BinaryOp::kDiv:
      return x / y;
    case BinaryOp::kMaximum:
      return x >= y ? x : y;
    case BinaryOp::kMinimum:
      return x <= y ? x : y;
    case BinaryOp::kEqual:
      return x == y ? 1.0f : 0.0f;
    case BinaryOp::kGreater:
      return x > y ? 1.0f : 0.0f;
  }
  return 0;
}

struct ShapePair {
  Shape a, b;
};

const std::vector<ShapePair>& BroadcastCases() {
  static const auto* cases = new std::vector<ShapePair>{
      {{6}, {6}},
      {{64, 256}, {256}},
      {{256}, {64, 256}},
      {{4, 1, 3}, {1, 5, 1}},
      {{2, 3, 4}, {3, 1}},
      {{2, 3}, {}},
      {{}, {7}},
      {{300, 400}, {300, 400}},   // split across threads, one long run
      {{300, 400}, {400}},        // split by rows
      {{300, 1, 40}, {1, 30, 1}}  // outer product-like, split by rows
  };
  return *cases;
}

TEST_F(CpuBackendTest, BinaryMatchesReferenceOnEveryBroadcastPattern) {
  uint32_t seed = 1;
  for (const ShapePair& c : BroadcastCases()) {
    Tensor a = RandomTensor(c.a, seed++), b = RandomTensor(c.b, seed++, 0.5f, 2.0f);
    const Shape out_shape = *BroadcastShapes(c.a, c.b);
    for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv}) {
      Tensor out(DType::kFloat32, out_shape);
      ASSERT_TRUE(backend_.Binary(op, a, b, out).ok());
      std::vector<float> want(out.num_elements());
      ForEachBroadcast(out_shape, BroadcastStrides(c.a, out_shape),
                       BroadcastStrides(c.b, out_shape), [&](int64_t i, int64_t p, int64_t q) {
                         want[i] = Ref(op, a.data<float>()[p], b.data<float>()[q]);
                       });
      EXPECT_THAT(Values(out), Pointwise(FloatNear(1e-6f), want))
          << c.a.DebugString() << " op " << static_cast<int>(op) << " " << c.b.DebugString();
    }
  }
}

TEST_F(CpuBackendTest, BinaryBackwardSumsOverRepeatedDims) {
  uint32_t seed = 100;
  for (const ShapePair& c : BroadcastCases()) {
    Tensor a = RandomTensor(c.a, seed++), b = RandomTensor(c.b, seed++, 0.5f, 2.0f);
    const Shape out_shape = *BroadcastShapes(c.a, c.b);
    Tensor g = RandomTensor(out_shape, seed++);
    for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv}) {
      Tensor ga(DType::kFloat32, c.a), gb(DType::kFloat32, c.b);
      ASSERT_TRUE(backend_.BinaryBackward(op, a, b, g, &ga, &gb).ok());
      std::vector<double> want_a(a.num_elements(), 0), want_b(b.num_elements(), 0);
      ForEachBroadcast(out_shape, BroadcastStrides(c.a, out_shape),
                       BroadcastStrides(c.b, out_shape), [&](int64_t i, int64_t p, int64_t q) {
                         const double d = g.data<float>()[i], x = a.data<float>()[p],
                                      y = b.data<float>()[q];
                         switch (op) {
                           case BinaryOp::kAdd:
                             want_a[p] += d, want_b[q] += d;
                             break;
                           case BinaryOp::kSub:
                             want_a[p] += d, want_b[q] -= d;
                             break;
                           case BinaryOp::kMul:
                             want_a[p] += d * y, want_b[q] += d * x;
                             break;
                           case BinaryOp::kDiv:
                             want_a[p] += d / y, want_b[q] -= d * x / (y * y);
                             break;
                           // Tested in tests/train/ops/arithmetic_test.cc (ties, NaN).
                           case BinaryOp::kMaximum:
                           case BinaryOp::kMinimum:
                           case BinaryOp::kEqual:
                           case BinaryOp::kGreater:
                             break;
                         }
                       });
      for (int64_t i = 0; i < a.num_elements(); ++i) {
        ASSERT_NEAR(ga.data<float>()[i], want_a[i], 1e-3 + 1e-4 * std::abs(want_a[i]))
            << c.a.DebugString() << " vs " << c.b.DebugString() << " op " << static_cast<int>(op);
      }
      for (int64_t i = 0; i < b.num_elements(); ++i) {
        ASSERT_NEAR(gb.data<float>()[i], want_b[i], 1e-3 + 1e-4 * std::abs(want_b[i]))
            << c.a.DebugString() << " vs " << c.b.DebugString() << " op " << static_cast<int>(op);
      }
    }
  }
}

TEST_F(CpuBackendTest, BinaryBackwardComputesOnlyWhatIsAskedFor) {
  Tensor a = T({1, 2}, {2}), b = T({3, 4}, {2}), g = T({1, 1}, {2});
  Tensor gb(DType::kFloat32, Shape{2});
  ASSERT_TRUE(backend_.BinaryBackward(BinaryOp::kMul, a, b, g, nullptr, &gb).ok());
  EXPECT_THAT(Values(gb), ElementsAre(1, 2));
}

struct ReduceCase {
  Shape shape;
  std::vector<bool> reduced;
};

// An empty batch's gradient of a broadcast operand is zeros: the reduction divided its grain by
// the empty dim (SIGFPE, the process gone).
TEST_F(CpuBackendTest, BinaryBackwardOverAnEmptyBroadcastGivesZeros) {
  const Tensor a(DType::kFloat32, Shape{0, 4}), g(DType::kFloat32, Shape{0, 4});
  const Tensor b = T({1, 2, 3, 4}, {4});
  for (BinaryOp op :
       {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv, BinaryOp::kMaximum}) {
    Tensor gb = T({9, 9, 9, 9}, {4});
    ASSERT_TRUE(backend_.BinaryBackward(op, a, b, g, nullptr, &gb).ok());
    EXPECT_THAT(Values(gb), ElementsAre(0, 0, 0, 0)) << static_cast<int>(op);
  }
}

// Sums of many elements keep float32's precision: one float accumulator, left to right, gave
// 412.27 for 4M squares of 0.01 (L2 penalties, clipnorm) and stopped at 2^24 for ones. Each
// reduction pattern is checked (a run, columns, the odometer's fallback).
TEST_F(CpuBackendTest, LargeSumsKeepFloatPrecision) {
  const int64_t n = int64_t{1} << 22;
  Tensor small(DType::kFloat32, Shape{n});
  std::fill_n(small.data<float>(), n, 1e-4f);
  Tensor total(DType::kFloat32, Shape{1});
  ASSERT_TRUE(backend_.Reduce(ReduceOp::kSum, small, {true}, 1.0f, total).ok());
  EXPECT_NEAR(total.data<float>()[0], n * static_cast<double>(1e-4f), 1e-5 * 419.43);
  const int64_t ones = (int64_t{1} << 24) + 8;
  Tensor one(DType::kFloat32, Shape{ones});
  std::fill_n(one.data<float>(), ones, 1.0f);
  ASSERT_TRUE(backend_.Reduce(ReduceOp::kSum, one, {true}, 1.0f, total).ok());
  EXPECT_EQ(total.data<float>()[0], static_cast<float>(ones));
  // Columns: [R, K] with R = 2^22 / 2 rows of 0.1.
  Tensor rows(DType::kFloat32, Shape{n / 2, 2});
  std::fill_n(rows.data<float>(), n, 0.1f);
  Tensor columns(DType::kFloat32, Shape{1, 2});
  ASSERT_TRUE(backend_.Reduce(ReduceOp::kSum, rows, {true, false}, 1.0f, columns).ok());
  for (float c : Values(columns)) EXPECT_NEAR(c, (n / 2) * static_cast<double>(0.1f), 1e-6 * n);
  // The fallback: [R, K, R].
  Tensor mixed(DType::kFloat32, Shape{n / 8, 2, 4});
  std::fill_n(mixed.data<float>(), n, 0.1f);
  Tensor middle(DType::kFloat32, Shape{1, 2, 1});
  ASSERT_TRUE(backend_.Reduce(ReduceOp::kSum, mixed, {true, false, true}, 1.0f, middle).ok());
  for (float c : Values(middle)) EXPECT_NEAR(c, (n / 2) * static_cast<double>(0.1f), 1e-6 * n);
}

// An allocation past the machine's memory is ResourceExhausted, as the CUDA backend's: the
// allocator's bad_alloc crossed the Backend interface.
TEST_F(CpuBackendTest, AnAllocationPastMemoryIsResourceExhausted) {
#if defined(ABSL_HAVE_ADDRESS_SANITIZER) || defined(ABSL_HAVE_THREAD_SANITIZER)
  GTEST_SKIP() << "the sanitizers' allocators abort on such a request";
#endif
  absl::StatusOr<Tensor> huge = backend_.Allocate(DType::kFloat32, Shape{int64_t{1} << 46});
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
}

// A NaN wins a max and stays, as TensorFlow's reduce_max: std::max kept whichever came first, so
// [NaN, 1] gave 1 and [NaN] -inf, hiding NaN activations behind GlobalMaxPool2D.
TEST_F(CpuBackendTest, MaxPropagatesNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor out(DType::kFloat32, Shape{1});
  for (const Tensor& x : {T({nan, 1}, {2}), T({1, nan}, {2}), T({nan}, {1})}) {
    ASSERT_TRUE(backend_.Reduce(ReduceOp::kMax, x, {true}, 1.0f, out).ok());
    EXPECT_TRUE(std::isnan(out.data<float>()[0])) << x.DebugString();
  }
  Tensor columns(DType::kFloat32, Shape{1, 2});
  ASSERT_TRUE(
      backend_.Reduce(ReduceOp::kMax, T({1, nan, 2, 3}, {2, 2}), {true, false}, 1.0f, columns)
          .ok());
  EXPECT_EQ(columns.data<float>()[0], 2.0f);
  EXPECT_TRUE(std::isnan(columns.data<float>()[1]));
}

// A NaN stays NaN through a ReLU, as in PyTorch and TensorFlow, on every path a ReLU takes (alone,
// fused into a matmul, a convolution, a residual add or a batch norm): x > 0 ? x : 0 made it 0,
// so a NaN input trained the model into NaN weights while the loss looked finite.
TEST_F(CpuBackendTest, ReluPropagatesNaNOnEveryPath) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto expect_nan_at_0 = [](const Tensor& t, const char* path) {
    EXPECT_TRUE(std::isnan(t.data<float>()[0])) << path << ": " << t.data<float>()[0];
    for (int64_t i = 1; i < t.num_elements(); ++i) {
      EXPECT_FALSE(std::isnan(t.data<float>()[i])) << path << " element " << i;
    }
  };
  Tensor y(DType::kFloat32, Shape{4});
  ASSERT_TRUE(backend_.Unary(UnaryOp::kRelu, T({nan, -1, 2, 0}, {4}), y).ok());
  expect_nan_at_0(y, "Unary");
  EXPECT_EQ(y.data<float>()[1], 0.0f);
  EXPECT_EQ(y.data<float>()[2], 2.0f);
  ASSERT_TRUE(backend_.AddRelu(T({nan, -1, 2, 0}, {4}), T({1, 0, 1, 0}, {4}), y).ok());
  expect_nan_at_0(y, "AddRelu");
  // Row 0 of a reads the NaN; row 1 does not.
  Tensor mm(DType::kFloat32, Shape{2, 1});
  ASSERT_TRUE(
      backend_.MatMulBias(T({nan, 1, -3, 1}, {2, 2}), T({1, 1}, {2, 1}), T({0}, {1}), true, mm)
          .ok());
  expect_nan_at_0(mm, "MatMulBias");
  EXPECT_EQ(mm.data<float>()[1], 0.0f);
  // A 1x1 convolution of a 1x2 image: its first pixel is NaN.
  ConvGeometry geo;
  geo.n = 1, geo.h = 1, geo.w = 2, geo.c = 1, geo.kh = 1, geo.kw = 1, geo.o = 1;
  geo.oh = 1, geo.ow = 2;
  Tensor conv(DType::kFloat32, Shape{1, 1, 2, 1});
  ASSERT_TRUE(backend_
                  .Conv2DBiasReluForward(geo, T({nan, -2}, {1, 1, 2, 1}), T({1}, {1, 1, 1, 1}),
                                         T({0}, {1}), conv)
                  .ok());
  expect_nan_at_0(conv, "Conv2DBiasReluForward");
  if (backend_.FusesBatchNormRelu()) {
    // Channel 0's statistics hold the NaN: its column is NaN, channel 1's is not.
    const Tensor x = T({nan, 1, 2, -1}, {2, 2});
    Tensor bn(DType::kFloat32, Shape{2, 2}), mean(DType::kFloat32, Shape{2}),
        var(DType::kFloat32, Shape{2});
    Tensor workspace(DType::kUint8, Shape{backend_.BatchNormReluWorkspaceBytes(x)});
    ASSERT_TRUE(backend_
                    .BatchNormReluForwardTraining(x, T({1, 1}, {2}), T({0, 0}, {2}), 1e-3f, bn,
                                                  mean, var, workspace)
                    .ok());
    EXPECT_TRUE(std::isnan(bn.data<float>()[0]) && std::isnan(bn.data<float>()[2]));
    EXPECT_FALSE(std::isnan(bn.data<float>()[1]) || std::isnan(bn.data<float>()[3]));
  }
}

TEST_F(CpuBackendTest, ReduceMatchesReferenceOnEveryPattern) {
  const std::vector<ReduceCase> cases = {
      {{64, 256}, {false, true}},            // [K, R]: row sums
      {{64, 256}, {true, false}},            // [R, K]: column sums (bias gradient)
      {{3000, 40}, {true, false}},           // columns split across threads
      {{8, 300, 50}, {false, true, false}},  // [K, R, K]
      {{5, 7, 9}, {true, false, true}},      // [R, K, R]: the fallback
      {{300, 200}, {true, true}},            // everything
      {{4, 1, 6}, {false, true, false}},     // reducing a size-1 dim copies
      {{2000, 30}, {false, true}},           // rows split across threads
  };
  uint32_t seed = 7;
  for (const ReduceCase& c : cases) {
    Tensor x = RandomTensor(c.shape, seed++);
    Shape kept;
    for (int d = 0; d < c.shape.rank(); ++d) kept.AddDim(c.reduced[d] ? 1 : c.shape.dim(d));
    const std::vector<int64_t> so = BroadcastStrides(kept, c.shape);
    const std::vector<int64_t> zeros(c.shape.rank(), 0);
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
      Tensor out(DType::kFloat32, kept);
      const float scale = op == ReduceOp::kSum ? 0.5f : 1.0f;
      ASSERT_TRUE(backend_.Reduce(op, x, c.reduced, scale, out).ok());
      std::vector<double> want(kept.num_elements(), op == ReduceOp::kSum
                                                        ? 0.0
                                                        : -std::numeric_limits<double>::infinity());
      ForEachBroadcast(c.shape, so, zeros, [&](int64_t i, int64_t p, int64_t) {
        const double v = x.data<float>()[i];
        want[p] = op == ReduceOp::kSum ? want[p] + v : std::max(want[p], v);
      });
      for (int64_t i = 0; i < out.num_elements(); ++i) {
        ASSERT_NEAR(out.data<float>()[i], want[i] * scale, 1e-3)
            << c.shape.DebugString() << " op " << static_cast<int>(op) << " at " << i;
      }
    }
  }
}

TEST_F(CpuBackendTest, TransposeMatchesReference) {
  Tensor x = RandomTensor({30, 40, 50}, 3);
  const std::vector<int> perm = {2, 0, 1};
  Tensor out(DType::kFloat32, Shape{50, 30, 40});
  ASSERT_TRUE(backend_.Transpose(x, perm, out).ok());
  for (int64_t i = 0; i < 30; i += 7) {
    for (int64_t j = 0; j < 40; j += 3) {
      for (int64_t k = 0; k < 50; k += 11) {
        ASSERT_EQ(out.data<float>()[(k * 30 + i) * 40 + j], x.data<float>()[(i * 40 + j) * 50 + k]);
      }
    }
  }
}

TEST_F(CpuBackendTest, ConcatAndSplitAreInverse) {
  std::vector<Tensor> parts = {RandomTensor({3, 2, 4}, 1), RandomTensor({3, 5, 4}, 2)};
  Tensor whole(DType::kFloat32, Shape{3, 7, 4});
  ASSERT_TRUE(backend_.Concat(parts, 1, whole).ok());
  EXPECT_EQ(whole.data<float>()[(1 * 7 + 2) * 4 + 3], parts[1].data<float>()[(1 * 5 + 0) * 4 + 3]);
  std::vector<Tensor> back = {Tensor(DType::kFloat32, Shape{3, 2, 4}),
                              Tensor(DType::kFloat32, Shape{3, 5, 4})};
  ASSERT_TRUE(backend_.Split(whole, 1, back).ok());
  EXPECT_TRUE(back[0].Equals(parts[0]));
  EXPECT_TRUE(back[1].Equals(parts[1]));
}

// An optimizer update's step scalars (backend::StepScalar): rate, decay, Nadam's two.
Tensor Step(float rate, float decay = 0, float gradient_coefficient = 0, float v_scale = 0) {
  return T({rate, decay, gradient_coefficient, v_scale}, {4});
}

TEST_F(CpuBackendTest, SgdUpdateMatchesHandComputedSteps) {
  Tensor w = T({1, 2}, {2}), g = T({0.5f, -1}, {2});
  ASSERT_TRUE(backend_.SgdUpdate(w, g, nullptr, Step(0.1f), 0, false).ok());
  EXPECT_THAT(Values(w), Pointwise(FloatNear(1e-6f), {0.95f, 2.1f}));
  // Momentum 0.9 from v = 1: v = 0.9 - 0.1 * 0.5 = 0.85, w = 1 + 0.85.
  w = T({1}, {1});
  Tensor v = T({1}, {1});
  ASSERT_TRUE(backend_.SgdUpdate(w, T({0.5f}, {1}), &v, Step(0.1f), 0.9f, false).ok());
  EXPECT_THAT(Values(v), Pointwise(FloatNear(1e-6f), {0.85f}));
  EXPECT_THAT(Values(w), Pointwise(FloatNear(1e-6f), {1.85f}));
  // Nesterov: w += 0.9 * 0.85 - 0.05; decay first: w = 1 - 0.1 * 0.5 * 1.
  w = T({1}, {1});
  v = T({1}, {1});
  ASSERT_TRUE(backend_.SgdUpdate(w, T({0.5f}, {1}), &v, Step(0.1f, 0.05f), 0.9f, true).ok());
  EXPECT_THAT(Values(w), Pointwise(FloatNear(1e-6f), {0.95f + 0.9f * 0.85f - 0.05f}));
  EXPECT_FALSE(backend_.SgdUpdate(w, T({0.5f}, {1}), nullptr, Step(0.1f), 0.9f, false).ok());
  // The step's scalars are float32[4]: a bare learning rate is refused, naming what came.
  const absl::Status short_step =
      backend_.SgdUpdate(w, T({0.5f}, {1}), nullptr, T({0.1f}, {1}), 0, false);
  EXPECT_EQ(short_step.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(short_step.message().find("float32[4]"), std::string::npos) << short_step;
}

TEST_F(CpuBackendTest, AdamUpdateMatchesHandComputedStep) {
  Tensor w = T({1}, {1}), g = T({2}, {1}), m = T({0}, {1}), v = T({0}, {1});
  ASSERT_TRUE(backend_.AdamUpdate(w, g, m, v, Step(0.01f), 0.9f, 0.999f, 1e-7f).ok());
  // m = 0.2, v = 0.004, w = 1 - 0.01 * 0.2 / (sqrt(0.004) + 1e-7).
  EXPECT_THAT(Values(m), Pointwise(FloatNear(1e-6f), {0.2f}));
  EXPECT_THAT(Values(v), Pointwise(FloatNear(1e-7f), {0.004f}));
  EXPECT_THAT(Values(w), Pointwise(FloatNear(1e-6f), {1 - 0.01f * 0.2f / std::sqrt(0.004f)}));
  // With decay 0.5 the weight halves before the same kind of step: m = 0.38, v = 0.007996.
  ASSERT_TRUE(backend_.AdamUpdate(w, g, m, v, Step(0.01f, 0.5f), 0.9f, 0.999f, 1e-7f).ok());
  const float w1 = 1 - 0.01f * 0.2f / std::sqrt(0.004f);
  EXPECT_THAT(Values(w),
              Pointwise(FloatNear(1e-6f), {0.5f * w1 - 0.01f * 0.38f / std::sqrt(0.007996f)}));
}

// A moment decayed into float32's denormals (a weight whose gradient stays 0) reads as 0 and
// is written as 0, and the caller's floating-point mode is left as it was.
TEST_F(CpuBackendTest, OptimizerUpdatesFlushDenormalSlotsToZero) {
  const float denormal = 1e-39f;
  ASSERT_EQ(std::fpclassify(denormal), FP_SUBNORMAL);
  Tensor w = T({1, 1}, {2}), g = T({0, 0}, {2}), m = T({denormal, 0.5f}, {2}),
         v = T({denormal, 1}, {2});
  const unsigned csr = _mm_getcsr();
  ASSERT_TRUE(backend_.AdamUpdate(w, g, m, v, Step(0.01f), 0.9f, 0.999f, 1e-7f).ok());
  EXPECT_EQ(_mm_getcsr(), csr);
  // Element 0 as if its moments were 0: they stay 0 (not 0.9 * 1e-39) and w does not move.
  EXPECT_EQ(m.data<float>()[0], 0.0f);
  EXPECT_EQ(v.data<float>()[0], 0.0f);
  EXPECT_EQ(w.data<float>()[0], 1.0f);
  // Element 1 as ever: m = 0.45, v = 0.999.
  EXPECT_FLOAT_EQ(m.data<float>()[1], 0.45f);
  EXPECT_FLOAT_EQ(v.data<float>()[1], 0.999f);
  Tensor velocity = T({denormal}, {1}), w2 = T({2}, {1});
  ASSERT_TRUE(backend_.SgdUpdate(w2, T({0}, {1}), &velocity, Step(0.1f), 0.9f, false).ok());
  EXPECT_EQ(velocity.data<float>()[0], 0.0f);
  EXPECT_EQ(w2.data<float>()[0], 2.0f);
  // The thread's own arithmetic still keeps denormals.
  volatile float x = denormal;
  EXPECT_EQ(std::fpclassify(x * 0.5f), FP_SUBNORMAL);
}

// Every rule and its variants, for the tests of many variables in one update.
std::vector<UpdateRule> EveryUpdateRule() {
  return {
      {.kind = UpdateKind::kSgd},
      {.kind = UpdateKind::kSgd, .momentum = 0.9f},
      {.kind = UpdateKind::kSgd, .momentum = 0.9f, .nesterov = true},
      {.kind = UpdateKind::kAdam, .beta_1 = 0.9f, .beta_2 = 0.999f, .epsilon = 1e-7f},
      {.kind = UpdateKind::kRmsprop, .rho = 0.9f, .epsilon = 1e-7f},
      {.kind = UpdateKind::kRmsprop,
       .momentum = 0.5f,
       .rho = 0.9f,
       .centered = true,
       .epsilon = 1e-7f},
      {.kind = UpdateKind::kAdagrad, .epsilon = 1e-7f},
      {.kind = UpdateKind::kAdadelta, .rho = 0.95f, .epsilon = 1e-7f},
      {.kind = UpdateKind::kAdamax, .beta_1 = 0.9f, .beta_2 = 0.999f, .epsilon = 1e-7f},
      {.kind = UpdateKind::kNadam, .beta_1 = 0.9f, .beta_2 = 0.999f, .epsilon = 1e-7f},
  };
}

// One OptimizerUpdate over many variables, whose sizes straddle the threads' chunks (an empty
// one among them), gives for every rule the bits of one call per variable over three steps:
// every element is updated once, with its own variable's gradient and slots.
TEST_F(CpuBackendTest, OptimizerUpdateOverManyVariablesGivesTheBitsOfOneCallEach) {
  const std::vector<int64_t> sizes = {1, 31, 40000, 0, 70001, 5, 32768};
  for (const UpdateRule& rule : EveryUpdateRule()) {
    SCOPED_TRACE(absl::StrCat(UpdateName(rule.kind), " momentum ", rule.momentum, " centered ",
                              rule.centered));
    // Two equal sets of variables and slots (slots positive: accumulators of squares).
    struct Variables {
      std::vector<Tensor> w;
      std::vector<std::array<Tensor, kMaxUpdateSlots>> slots;
    };
    auto make = [&] {
      Variables set;
      for (size_t i = 0; i < sizes.size(); ++i) {
        const uint32_t seed = static_cast<uint32_t>(10 * i);
        set.w.push_back(RandomTensor({sizes[i]}, seed));
        auto& slots = set.slots.emplace_back();
        // Slot 1 small: as RMSprop's average gradient, its square stays under the velocity
        // (slot 0), so that v - a^2 + epsilon keeps a real square root.
        for (int j = 0; j < kMaxUpdateSlots; ++j) {
          slots[j] = RandomTensor({sizes[i]}, seed + 1 + j, 0.01f, j == 1 ? 0.05f : 1.0f);
        }
      }
      return set;
    };
    Variables together = make(), alone = make();
    auto operands = [&](Variables& set, size_t i, const Tensor& g) {
      UpdateOperands var{.w = &set.w[i], .g = &g};
      for (int j = 0; j < kMaxUpdateSlots; ++j) {
        if (UpdateUsesSlot(rule, j)) var.slots[j] = &set.slots[i][j];
      }
      return var;
    };
    for (int step = 0; step < 3; ++step) {
      std::vector<Tensor> grads;
      for (size_t i = 0; i < sizes.size(); ++i) {
        grads.push_back(RandomTensor({sizes[i]}, static_cast<uint32_t>(1000 + 10 * step + i)));
      }
      // Decay on the second step; Nadam's two coefficients in every step.
      const Tensor s =
          Step(0.01f * static_cast<float>(step + 1), step == 1 ? 1e-3f : 0.0f, 0.02f, 1.5f);
      std::vector<UpdateOperands> all;
      for (size_t i = 0; i < sizes.size(); ++i) all.push_back(operands(together, i, grads[i]));
      ASSERT_TRUE(backend_.OptimizerUpdate(rule, all, s).ok());
      for (size_t i = 0; i < sizes.size(); ++i) {
        const UpdateOperands one = operands(alone, i, grads[i]);
        ASSERT_TRUE(backend_.OptimizerUpdate(rule, {&one, 1}, s).ok());
      }
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      EXPECT_TRUE(together.w[i].Equals(alone.w[i])) << "variable " << i;
      for (int j = 0; j < kMaxUpdateSlots; ++j) {
        EXPECT_TRUE(together.slots[i][j].Equals(alone.slots[i][j]))
            << "variable " << i << " slot " << j;
      }
    }
    // And the update moved the weights, to numbers.
    EXPECT_FALSE(together.w[2].Equals(RandomTensor({sizes[2]}, 20)));
    for (const Tensor& w : together.w) {
      for (const float v : w.flat<float>()) ASSERT_TRUE(std::isfinite(v));
    }
  }
}

TEST_F(CpuBackendTest, LargeElementwiseKernelsMatchScalarFormulas) {
  Tensor x = RandomTensor({100000}, 5, -3, 3);
  Tensor g = RandomTensor({100000}, 6);
  Tensor y(DType::kFloat32, x.shape()), gx(DType::kFloat32, x.shape());
  ASSERT_TRUE(backend_.Unary(UnaryOp::kRelu, x, y).ok());
  ASSERT_TRUE(backend_.UnaryBackward(UnaryOp::kRelu, x, y, g, gx).ok());
  for (int64_t i = 0; i < x.num_elements(); i += 997) {
    const float v = x.data<float>()[i];
    ASSERT_EQ(y.data<float>()[i], v > 0 ? v : 0.0f);
    ASSERT_EQ(gx.data<float>()[i], v > 0 ? g.data<float>()[i] : 0.0f);
  }
  ASSERT_TRUE(backend_.Unary(UnaryOp::kTanh, x, y).ok());
  ASSERT_TRUE(backend_.UnaryBackward(UnaryOp::kTanh, x, y, g, gx).ok());
  for (int64_t i = 0; i < x.num_elements(); i += 997) {
    const float t = std::tanh(x.data<float>()[i]);
    ASSERT_FLOAT_EQ(y.data<float>()[i], t);
    ASSERT_NEAR(gx.data<float>()[i], g.data<float>()[i] * (1 - t * t), 1e-6);
  }
}

TEST_F(CpuBackendTest, BatchNormTrainingNormalisesPerChannel) {
  Tensor x = RandomTensor({6, 3}, 9, -2, 5);
  Tensor gamma = T({1, 2, 3}, {3}), beta = T({0, 1, -1}, {3});
  Tensor y(DType::kFloat32, x.shape()), mean(DType::kFloat32, Shape{3}),
      var(DType::kFloat32, Shape{3});
  ASSERT_TRUE(backend_.BatchNormForwardTraining(x, gamma, beta, 1e-3f, y, mean, var).ok());
  for (int c = 0; c < 3; ++c) {
    double s = 0, sq = 0;
    for (int i = 0; i < 6; ++i) s += x.data<float>()[i * 3 + c];
    const double mu = s / 6;
    for (int i = 0; i < 6; ++i) sq += std::pow(x.data<float>()[i * 3 + c] - mu, 2);
    const double v = sq / 6;  // biased, as tf.nn.moments
    EXPECT_NEAR(mean.data<float>()[c], mu, 1e-5);
    EXPECT_NEAR(var.data<float>()[c], v, 1e-4);
    for (int i = 0; i < 6; ++i) {
      const double want =
          gamma.data<float>()[c] * (x.data<float>()[i * 3 + c] - mu) / std::sqrt(v + 1e-3) +
          beta.data<float>()[c];
      EXPECT_NEAR(y.data<float>()[i * 3 + c], want, 1e-4);
    }
  }
}

// A 3x3 SAME convolution at stride 1 runs forward as a deconvolution with the filter flipped
// (ConvForwardAlgorithm): the same sums as the direct convolution, checked against a plain loop
// here both ways, on channel counts of oneDNN's different kernels; other geometries stay direct.
// Returns the ConvForwardAlgorithm setting to the environment's, however the test ends.
class ScopedConvForwardAlgorithm {
 public:
  ~ScopedConvForwardAlgorithm() { ReadConvForwardAlgorithmFromEnvironment(); }
};

// ConvForwardAlgorithmFor's algorithm, or -1 for an error.
int AlgorithmFor(const ConvGeometry& geo) {
  const absl::StatusOr<ConvForwardAlgorithm> a = ConvForwardAlgorithmFor(geo);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? static_cast<int>(*a) : -1;
}
constexpr int kDirect = static_cast<int>(ConvForwardAlgorithm::kDirect);
constexpr int kDeconvolution = static_cast<int>(ConvForwardAlgorithm::kDeconvolution);

TEST_F(CpuBackendTest, ConvolutionForwardAsADeconvolutionGivesTheConvolution) {
  ScopedConvForwardAlgorithm restore;
  for (const auto& [n, h, c, o] : std::vector<std::array<int64_t, 4>>{
           {2, 6, 3, 4}, {2, 7, 1, 16}, {3, 5, 16, 16}, {2, 9, 24, 40}, {1, 4, 64, 8}}) {
    SCOPED_TRACE(absl::StrCat("n ", n, " h ", h, " c ", c, " o ", o));
    ConvGeometry geo;
    geo.n = n, geo.h = h, geo.w = h + 1, geo.c = c, geo.kh = 3, geo.kw = 3, geo.o = o;
    geo.oh = h, geo.ow = h + 1;
    geo.pad_top = geo.pad_bottom = geo.pad_left = geo.pad_right = 1;
    const Tensor x = RandomTensor({n, h, h + 1, c}, 20), f = RandomTensor({3, 3, c, o}, 21);
    // y[n, i, j, o] = sum over (di, dj, ci) of x[n, i + di - 1, j + dj - 1, ci] f[di, dj, ci, o].
    std::vector<double> want(n * h * (h + 1) * o, 0.0);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j <= h; ++j)
          for (int64_t di = 0; di < 3; ++di)
            for (int64_t dj = 0; dj < 3; ++dj) {
              const int64_t si = i + di - 1, sj = j + dj - 1;
              if (si < 0 || si >= h || sj < 0 || sj > h) continue;
              for (int64_t ci = 0; ci < c; ++ci)
                for (int64_t oc = 0; oc < o; ++oc) {
                  want[((b * h + i) * (h + 1) + j) * o + oc] +=
                      double(x.data<float>()[((b * h + si) * (h + 1) + sj) * c + ci]) *
                      f.data<float>()[((di * 3 + dj) * c + ci) * o + oc];
                }
            }
    for (ConvForwardAlgorithm a :
         {ConvForwardAlgorithm::kDirect, ConvForwardAlgorithm::kDeconvolution}) {
      SetConvForwardAlgorithm(a);
      EXPECT_EQ(AlgorithmFor(geo), static_cast<int>(a));
      Tensor y(DType::kFloat32, Shape{n, h, h + 1, o});
      // The first call of an algorithm for this geometry makes its primitive: one cache miss
      // each, so the deconvolution did run (these shapes are this test's own).
      const int64_t misses = DnnlPrimitiveCache::Global().misses();
      ASSERT_TRUE(backend_.Conv2DForward(geo, x, f, y).ok());
      EXPECT_EQ(DnnlPrimitiveCache::Global().misses(), misses + 1);
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(y.data<float>()[i], want[i], 1e-4 * (1 + std::fabs(want[i])))
            << "element " << i
            << (a == ConvForwardAlgorithm::kDirect ? " direct" : " deconvolution");
      }
    }
  }
  // Only that geometry: a 5x5 filter, stride 2 or VALID padding run the direct convolution.
  SetConvForwardAlgorithm(ConvForwardAlgorithm::kDeconvolution);
  ConvGeometry other;
  other.n = 1, other.h = other.w = 8, other.c = other.o = 4, other.kh = other.kw = 5;
  other.oh = other.ow = 8;
  other.pad_top = other.pad_bottom = other.pad_left = other.pad_right = 2;
  EXPECT_EQ(AlgorithmFor(other), kDirect);
  other.kh = other.kw = 3, other.pad_top = other.pad_bottom = other.pad_left = other.pad_right = 1;
  EXPECT_EQ(AlgorithmFor(other), kDeconvolution);
  other.stride_h = other.stride_w = 2, other.oh = other.ow = 4;
  EXPECT_EQ(AlgorithmFor(other), kDirect);
  other.stride_h = other.stride_w = 1, other.oh = other.ow = 6;
  other.pad_top = other.pad_bottom = other.pad_left = other.pad_right = 0;
  EXPECT_EQ(AlgorithmFor(other), kDirect);  // VALID
  const ConvGeometry same = [&] {
    ConvGeometry g = other;
    g.oh = g.ow = 8;
    g.pad_top = g.pad_bottom = g.pad_left = g.pad_right = 1;
    return g;
  }();
  ConvGeometry grouped = same;
  grouped.groups = 2;
  ConvGeometry dilated = same;
  dilated.dilation_h = dilated.dilation_w = 2;
  ConvGeometry uneven = same;
  uneven.pad_bottom = 2, uneven.oh = 9;
  ConvGeometry wide = same;
  wide.kw = 5, wide.pad_left = wide.pad_right = 2;
  for (const ConvGeometry* g : {&grouped, &dilated, &uneven, &wide}) {
    EXPECT_EQ(AlgorithmFor(*g), kDirect);
  }
  // With a bias the forward stays the convolution's (its fused bias): no new primitive kind.
  const Tensor x = RandomTensor({1, 8, 8, 4}, 22), f = RandomTensor({3, 3, 4, 4}, 23),
               bias = RandomTensor({4}, 24);
  Tensor with_bias(DType::kFloat32, Shape{1, 8, 8, 4}), plain(DType::kFloat32, Shape{1, 8, 8, 4});
  ASSERT_TRUE(backend_.Conv2DBiasForward(same, x, f, bias, with_bias).ok());
  ASSERT_TRUE(backend_.Conv2DForward(same, x, f, plain).ok());
  for (int64_t i = 0; i < plain.num_elements(); ++i) {
    ASSERT_NEAR(with_bias.data<float>()[i], plain.data<float>()[i] + bias.data<float>()[i % 4],
                1e-4)
        << i;
  }
}

// A $SLUICE_CONV_FORWARD naming no algorithm fails every convolution forward with its value,
// rather than running one the user did not ask for; valid values take effect.
TEST_F(CpuBackendTest, ConvolutionForwardRefusesAnUnknownSluiceConvForward) {
  ScopedConvForwardAlgorithm restore;
  const char* was = std::getenv("SLUICE_CONV_FORWARD");
  const std::optional<std::string> previous =
      was == nullptr ? std::nullopt : std::optional<std::string>(was);
  ConvGeometry same;
  same.n = 1, same.h = same.w = same.oh = same.ow = 5, same.c = same.o = 2, same.kh = same.kw = 3;
  same.pad_top = same.pad_bottom = same.pad_left = same.pad_right = 1;
  const Tensor x = RandomTensor({1, 5, 5, 2}, 30), f = RandomTensor({3, 3, 2, 2}, 31);
  Tensor y(DType::kFloat32, Shape{1, 5, 5, 2});
  setenv("SLUICE_CONV_FORWARD", "deconvolutoin", 1);
  ReadConvForwardAlgorithmFromEnvironment();
  const absl::Status s = backend_.Conv2DForward(same, x, f, y);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()),
              ::testing::HasSubstr("SLUICE_CONV_FORWARD must be auto, direct or deconvolution, "
                                   "got 'deconvolutoin'"));
  EXPECT_FALSE(GetConvForwardAlgorithm().ok());
  // SetConvForwardAlgorithm overrides the environment.
  SetConvForwardAlgorithm(ConvForwardAlgorithm::kDirect);
  EXPECT_TRUE(backend_.Conv2DForward(same, x, f, y).ok());
  setenv("SLUICE_CONV_FORWARD", "direct", 1);
  ReadConvForwardAlgorithmFromEnvironment();
  EXPECT_EQ(AlgorithmFor(same), kDirect);
  setenv("SLUICE_CONV_FORWARD", "deconvolution", 1);
  ReadConvForwardAlgorithmFromEnvironment();
  EXPECT_EQ(AlgorithmFor(same), kDeconvolution);
  if (previous) {
    setenv("SLUICE_CONV_FORWARD", previous->c_str(), 1);
  } else {
    unsetenv("SLUICE_CONV_FORWARD");
  }
}

// float32's fused ReLU keeps a byte of mask an element; a smaller workspace is refused, not
// written past its end.
TEST_F(CpuBackendTest, BatchNormReluRefusesAWorkspaceTooSmall) {
  Tensor x = RandomTensor({6, 4}, 10, -2, 5);
  Tensor gamma = T({1, 2, 3, 4}, {4}), beta = T({0, 1, -1, 0}, {4});
  Tensor y(DType::kFloat32, x.shape()), mean(DType::kFloat32, Shape{4}),
      var(DType::kFloat32, Shape{4});
  EXPECT_EQ(backend_.BatchNormReluWorkspaceBytes(x), 24);
  Tensor small(DType::kUint8, Shape{23});
  absl::Status s =
      backend_.BatchNormReluForwardTraining(x, gamma, beta, 1e-3f, y, mean, var, small);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("the workspace has 23 bytes"));
  Tensor dx(DType::kFloat32, x.shape()), dg(DType::kFloat32, Shape{4}),
      db(DType::kFloat32, Shape{4});
  s = backend_.BatchNormReluBackward(x, gamma, mean, var, small, y, 1e-3f, dx, dg, db);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

// bfloat16 batch norm (mixed_bfloat16's residual blocks) through the backend: the float32 results
// on the widened data, rounded once; the same statistics, parameter gradients and mask; with and
// without the fused ReLU, constant statistics, and inference. A channel count with AVX-512 loops
// (32) and one without (24).
TEST_F(CpuBackendTest, BatchNormOnBFloat16IsFloat32sRoundedOnce) {
  auto to = [&](const Tensor& t, DType dtype) {
    Tensor out(dtype, t.shape());
    EXPECT_TRUE(backend_.Cast(t, out).ok());
    return out;
  };
  for (int64_t c : {32, 24}) {
    SCOPED_TRACE(c);
    const Tensor x16 = to(RandomTensor({4, 5, 6, c}, 31, -2, 3), DType::kBFloat16),
                 g16 = to(RandomTensor({4, 5, 6, c}, 32, -1, 1), DType::kBFloat16);
    const Tensor x = to(x16, DType::kFloat32), g = to(g16, DType::kFloat32);
    const Tensor gamma = RandomTensor({c}, 33, 0.5f, 1.5f), beta = RandomTensor({c}, 34, -1, 1);
    for (bool relu : {false, true}) {
      SCOPED_TRACE(relu ? "relu" : "plain");
      auto stat = [&] { return Tensor(DType::kFloat32, Shape{c}); };
      Tensor y(DType::kFloat32, x.shape()), y16(DType::kBFloat16, x.shape());
      Tensor mean = stat(), var = stat(), mean16 = stat(), var16 = stat();
      Tensor ws(DType::kUint8, Shape{backend_.BatchNormReluWorkspaceBytes(x)}),
          ws16(DType::kUint8, Shape{backend_.BatchNormReluWorkspaceBytes(x16)});
      ASSERT_EQ(ws16.num_elements(), ws.num_elements());
      ASSERT_EQ(ws.num_elements(),
                internal::UsesAvx512BatchNorm(c) ? x.num_elements() / 8 : x.num_elements());
      if (relu) {
        ASSERT_TRUE(
            backend_.BatchNormReluForwardTraining(x, gamma, beta, 1e-3f, y, mean, var, ws).ok());
        ASSERT_TRUE(
            backend_.BatchNormReluForwardTraining(x16, gamma, beta, 1e-3f, y16, mean16, var16, ws16)
                .ok());
        EXPECT_TRUE(ws16.Equals(ws));
      } else {
        ASSERT_TRUE(backend_.BatchNormForwardTraining(x, gamma, beta, 1e-3f, y, mean, var).ok());
        ASSERT_TRUE(
            backend_.BatchNormForwardTraining(x16, gamma, beta, 1e-3f, y16, mean16, var16).ok());
      }
      EXPECT_TRUE(mean16.Equals(mean));
      EXPECT_TRUE(var16.Equals(var));
      EXPECT_TRUE(y16.Equals(to(y, DType::kBFloat16)));
      for (bool constant : {false, true}) {
        if (relu && constant) continue;
        Tensor dx(DType::kFloat32, x.shape()), dx16(DType::kBFloat16, x.shape());
        Tensor dg = stat(), db = stat(), dg16 = stat(), db16 = stat();
        if (relu) {
          ASSERT_TRUE(
              backend_.BatchNormReluBackward(x, gamma, mean, var, ws, g, 1e-3f, dx, dg, db).ok());
          ASSERT_TRUE(
              backend_
                  .BatchNormReluBackward(x16, gamma, mean, var, ws16, g16, 1e-3f, dx16, dg16, db16)
                  .ok());
        } else {
          ASSERT_TRUE(
              backend_.BatchNormBackward(x, gamma, mean, var, g, 1e-3f, constant, dx, dg, db).ok());
          ASSERT_TRUE(
              backend_
                  .BatchNormBackward(x16, gamma, mean, var, g16, 1e-3f, constant, dx16, dg16, db16)
                  .ok());
        }
        EXPECT_TRUE(dx16.Equals(to(dx, DType::kBFloat16)));
        EXPECT_TRUE(dg16.Equals(dg));
        EXPECT_TRUE(db16.Equals(db));
      }
    }
    Tensor yi(DType::kFloat32, x.shape()), yi16(DType::kBFloat16, x.shape());
    const Tensor moving_mean = RandomTensor({c}, 35, -1, 1),
                 moving_var = RandomTensor({c}, 36, 0.5f, 2);
    ASSERT_TRUE(
        backend_.BatchNormForwardInference(x, gamma, beta, moving_mean, moving_var, 1e-3f, yi)
            .ok());
    ASSERT_TRUE(
        backend_.BatchNormForwardInference(x16, gamma, beta, moving_mean, moving_var, 1e-3f, yi16)
            .ok());
    EXPECT_TRUE(yi16.Equals(to(yi, DType::kBFloat16)));
  }
  // float16 data is no batch norm's.
  Tensor h(DType::kFloat16, Shape{2, 16}), hy(DType::kFloat16, Shape{2, 16});
  Tensor m(DType::kFloat32, Shape{16}), v(DType::kFloat32, Shape{16});
  const Tensor ones = T(std::vector<float>(16, 1.0f), {16});
  const absl::Status refused = backend_.BatchNormForwardTraining(h, ones, ones, 1e-3f, hy, m, v);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()), ::testing::HasSubstr("not float32 or bfloat16"));
}

// Products of up to 2^21 multiply-adds run on the calling thread (kOneThreadMatMulMacs), larger
// ones on the OpenMP team: both sides of the limit compute the product, and the small one leaves
// the thread's team as it was.
TEST_F(CpuBackendTest, MatMulsOnEitherSideOfTheOneThreadLimit) {
  for (const int64_t n : {256, 257}) {  // 64 x 128 x 256 = 2^21: one thread; 257: the team
    Tensor a = RandomTensor({64, 128}, 4), b = RandomTensor({128, n}, 5);
    Tensor out(DType::kFloat32, Shape{64, n});
    ASSERT_TRUE(backend_.MatMul(a, false, b, false, out).ok());
    if (OpenMpThreads() > 0) {
      EXPECT_EQ(OpenMpThreads(), 2) << "n " << n;
    }
    for (int64_t i = 0; i < 64; i += 7) {
      for (int64_t j = 0; j < n; j += 11) {
        double want = 0;
        for (int64_t k = 0; k < 128; ++k) {
          want += double{a.data<float>()[i * 128 + k]} * b.data<float>()[k * n + j];
        }
        EXPECT_NEAR(out.data<float>()[i * n + j], want, 1e-4) << i << "," << j << " n " << n;
      }
    }
  }
}

TEST_F(CpuBackendTest, RepeatedShapesReuseCachedPrimitives) {
  Tensor a = RandomTensor({17, 13}, 1), b = RandomTensor({13, 11}, 2);
  Tensor out1(DType::kFloat32, Shape{17, 11}), out2(DType::kFloat32, Shape{17, 11});
  ASSERT_TRUE(backend_.MatMul(a, false, b, false, out1).ok());
  const int64_t misses = DnnlPrimitiveCache::Global().misses();
  const int64_t hits = DnnlPrimitiveCache::Global().hits();
  ASSERT_TRUE(backend_.MatMul(a, false, b, false, out2).ok());
  EXPECT_EQ(DnnlPrimitiveCache::Global().misses(), misses);
  EXPECT_EQ(DnnlPrimitiveCache::Global().hits(), hits + 1);
  EXPECT_TRUE(out1.Equals(out2));
  // A transposed operand is another primitive.
  Tensor bt = RandomTensor({11, 13}, 3);
  ASSERT_TRUE(backend_.MatMul(a, false, bt, true, out2).ok());
  EXPECT_EQ(DnnlPrimitiveCache::Global().misses(), misses + 1);
  for (int64_t i = 0; i < 17; i += 5) {
    for (int64_t j = 0; j < 11; j += 3) {
      double want = 0;
      for (int64_t k = 0; k < 13; ++k) {
        want += a.data<float>()[i * 13 + k] * bt.data<float>()[j * 13 + k];
      }
      EXPECT_NEAR(out2.data<float>()[i * 11 + j], want, 1e-4);
    }
  }
}

}  // namespace
}  // namespace sluice::train::backend::cpu

namespace sluice::train::backend::cpu {
namespace {

using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

TEST(CpuBackendSupportKernelsTest, AxpbyScalesAndAdds) {
  CpuBackend& b = CpuBackend::Get();
  Tensor x = Tensor::FromVector<float>({1, 2, 3});
  Tensor y = Tensor::FromVector<float>({10, 20, 30});
  ASSERT_TRUE(b.Axpby(2.0f, x, 0.5f, y).ok());
  EXPECT_THAT(Values(y), ElementsAre(7, 14, 21));
  Tensor wrong = Tensor::FromVector<float>({1, 2});
  EXPECT_EQ(b.Axpby(1, wrong, 1, y).code(), absl::StatusCode::kInvalidArgument);
}

// bfloat16 operands (the gradients of bfloat16 activations) are summed in float32 and rounded
// once, across tile boundaries (3,000 elements: several 512-element tiles and a partial one).
TEST(CpuBackendSupportKernelsTest, AxpbySumsBFloat16InFloat32) {
  CpuBackend& b = CpuBackend::Get();
  const int64_t n = 3000;
  Tensor x16(DType::kBFloat16, Shape{n}), y16(DType::kBFloat16, Shape{n});
  Tensor y32(DType::kFloat32, Shape{n});
  auto* px = static_cast<uint16_t*>(x16.raw_data());
  auto* py = static_cast<uint16_t*>(y16.raw_data());
  for (int64_t i = 0; i < n; ++i) {
    px[i] = BFloat16::FromFloat(1.0f + static_cast<float>(i % 7) / 128.0f);  // exact in bf16
    py[i] = BFloat16::FromFloat(256.0f);
    y32.data<float>()[i] = 256.0f;
  }
  ASSERT_TRUE(b.Axpby(1.0f, x16, 1.0f, y32).ok());  // bfloat16 into float32: exact
  ASSERT_TRUE(b.Axpby(1.0f, x16, 1.0f, y16).ok());  // into bfloat16: 257.x rounds to 256 or 258
  for (int64_t i = 0; i < n; ++i) {
    const float xi = BFloat16::ToFloat(px[i]);
    ASSERT_EQ(y32.data<float>()[i], 256.0f + xi) << i;
    // bfloat16 near 256 has a step of 2: 257 ties to even (256), above it goes to 258.
    ASSERT_EQ(BFloat16::ToFloat(py[i]), xi > 1.0f ? 258.0f : 256.0f) << i;
  }
}

TEST(CpuBackendSupportKernelsTest, CastLabelsCountsAndZeroesOutOfRange) {
  CpuBackend& b = CpuBackend::Get();
  Tensor labels = Tensor::FromVector<int32_t>({2, -1, 0, 3, 1});
  Tensor out(DType::kInt64, Shape{5});
  Tensor invalid(DType::kFloat32, Shape{1});
  ASSERT_TRUE(b.CastLabels(labels, 3, out, invalid).ok());
  EXPECT_THAT(out.flat<int64_t>(), ElementsAre(2, 0, 0, 0, 1));
  EXPECT_EQ(invalid.data<float>()[0], 2.0f);
}

TEST(CpuBackendSupportKernelsTest, InTopKFollowsInTopKAndArgmaxRules) {
  CpuBackend& b = CpuBackend::Get();
  // Row 0 ties classes 0 and 2; row 1 has a NaN; row 2's label is out of range.
  absl::StatusOr<Tensor> p = Tensor::FromVector<float>(
      {0.5f, 0.1f, 0.5f, 0.2f, std::nanf(""), 0.9f, 0.3f, 0.2f, 0.1f}, Shape{3, 3});
  ASSERT_TRUE(p.ok());
  Tensor labels = Tensor::FromVector<int64_t>({2, 2, 5});
  Tensor hits(DType::kFloat32, Shape{3});
  // in_top_k, k = 1: a tie is a hit (nothing scores strictly above), a NaN row a miss.
  ASSERT_TRUE(b.InTopK(*p, labels, 1, /*first_max_only=*/false, hits).ok());
  EXPECT_THAT(Values(hits), ElementsAre(1, 0, 0));
  // argmax: the first maximum of row 0 is class 0, not 2; row 1's is its NaN (class 1), as
  // ArgMax reads it, not the largest number (class 2).
  ASSERT_TRUE(b.InTopK(*p, labels, 1, /*first_max_only=*/true, hits).ok());
  EXPECT_THAT(Values(hits), ElementsAre(0, 0, 0));
  Tensor nan_labels = Tensor::FromVector<int64_t>({0, 1, 0});
  ASSERT_TRUE(b.InTopK(*p, nan_labels, 1, /*first_max_only=*/true, hits).ok());
  EXPECT_THAT(Values(hits), ElementsAre(1, 1, 1));
}

// A metric's batch total added in one kernel has the bits of the three it replaces: a sum over
// all of x times the scale (Reduce), added to the total (Axpby). Checked over a chain of batches
// so that the running total's rounding is compared too, for shapes that Reduce plans alike and
// the empty batch.
TEST(CpuBackendSupportKernelsTest, AccumulateSumGivesTheBitsOfReduceThenAxpby) {
  CpuBackend& b = CpuBackend::Get();
  for (const Shape& shape : {Shape{0}, Shape{1}, Shape{64}, Shape{37, 3}, Shape{2, 1, 5000}}) {
    for (const float scale : {1.0f, 0.5f, 1.0f / 64.0f, 3.7f}) {
      SCOPED_TRACE(absl::StrCat(shape.DebugString(), " scale ", scale));
      Tensor fused = Tensor::FromVector<float>({0.3f}), unfused = Tensor::FromVector<float>({0.3f});
      Tensor sum(DType::kFloat32, Shape{1});
      for (uint32_t batch = 0; batch < 4; ++batch) {
        const Tensor x = ::sluice::train::testing::RandomTensor(shape, 40 + batch, -3.0f, 5.0f);
        ASSERT_TRUE(b.AccumulateSum(x, scale, fused).ok());
        Tensor kept = *sum.Reshape([&] {
          Shape ones;
          for (int d = 0; d < shape.rank(); ++d) ones.AddDim(1);
          return ones;
        }());
        ASSERT_TRUE(
            b.Reduce(ReduceOp::kSum, x, std::vector<bool>(shape.rank(), true), scale, kept).ok());
        ASSERT_TRUE(b.Axpby(1.0f, sum, 1.0f, unfused).ok());
        ASSERT_EQ(fused.data<float>()[0], unfused.data<float>()[0]) << "batch " << batch;
      }
    }
  }
}

// The sparse cross-entropy's reduction in its kernel gives the bits of Reduce over its
// per-example losses, and its backward from one gradient those of BroadcastTo then the backward
// from [N] gradients. 3,000 rows are split across the threads; their losses are still summed in
// order.
TEST_F(CpuBackendTest, SparseCrossEntropyReducedInItsKernelGivesTheBitsOfReduce) {
  CpuBackend& b = backend_;
  for (const int64_t n : {1, 64, 3000}) {
    for (const int64_t c : {3, 10, 1000}) {
      SCOPED_TRACE(absl::StrCat(n, " x ", c));
      const float scale = 1.0f / static_cast<float>(n);
      const Tensor logits = ::sluice::train::testing::RandomTensor({n, c}, 7, -4.0f, 4.0f);
      Tensor labels(DType::kInt64, Shape{n});
      for (int64_t i = 0; i < n; ++i) labels.flat<int64_t>()[i] = (i * 7) % c;
      Tensor loss(DType::kFloat32, Shape{n}), probs(DType::kFloat32, Shape{n, c});
      Tensor fused(DType::kFloat32, Shape{1}), unfused(DType::kFloat32, Shape{1});
      ASSERT_TRUE(b.SparseSoftmaxCrossEntropy(logits, labels, loss, probs, scale, &fused).ok());
      ASSERT_TRUE(b.Reduce(ReduceOp::kSum, loss, {true}, scale, unfused).ok());
      EXPECT_EQ(fused.data<float>()[0], unfused.data<float>()[0]);

      const Tensor g = Tensor::FromVector<float>({1.7f});
      Tensor broadcast(DType::kFloat32, Shape{n});
      Tensor one(DType::kFloat32, Shape{n, c}), each(DType::kFloat32, Shape{n, c});
      ASSERT_TRUE(b.SparseSoftmaxCrossEntropyBackward(probs, labels, g, scale, one).ok());
      ASSERT_TRUE(b.BroadcastTo(g, scale, broadcast).ok());
      ASSERT_TRUE(b.SparseSoftmaxCrossEntropyBackward(probs, labels, broadcast, 1.0f, each).ok());
      EXPECT_TRUE(one.Equals(each));
    }
  }
}

}  // namespace
}  // namespace sluice::train::backend::cpu
