// The CPU backend's float32 batch norm kernels against a plain double-precision batch norm written
// here, on the channel counts the kernels unroll (16, 32, 64) and others, over many chunks of rows;
// the same bits on any thread count; and the variance of data far from 0. The bfloat16 forms
// against the float32 ones on the same (widened) data, rounded.
#include "train/backend/cpu/cpu_batch_norm_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "train/backend/compute_precision.h"
#include "train/backend/cpu/bfloat16_convert.h"
#include "train/backend/cpu/cpu_threads.h"

namespace sluice::train::backend::cpu {
namespace {

std::vector<float> BnRandom(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// Batch norm (+ ReLU) in double, from the definitions.
struct BnReference {
  std::vector<double> mean, variance, y, grad_x, grad_gamma, grad_beta;
};
BnReference ComputeBn(const std::vector<float>& x, const std::vector<float>& g, int64_t m,
                      int64_t c, const std::vector<float>& gamma, const std::vector<float>& beta,
                      double eps, bool relu, bool constant_statistics) {
  BnReference r;
  r.mean.assign(c, 0);
  r.variance.assign(c, 0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < c; ++j) r.mean[j] += x[i * c + j];
  }
  for (int64_t j = 0; j < c; ++j) r.mean[j] /= m;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      const double d = x[i * c + j] - r.mean[j];
      r.variance[j] += d * d;
    }
  }
  for (int64_t j = 0; j < c; ++j) r.variance[j] /= m;
  r.y.resize(m * c);
  std::vector<double> passed(m * c);  // the gradient reaching the batch norm's output
  for (int64_t i = 0; i < m * c; ++i) {
    const int64_t j = i % c;
    const double v = (x[i] - r.mean[j]) / std::sqrt(r.variance[j] + eps) * gamma[j] + beta[j];
    r.y[i] = relu && v <= 0 ? 0 : v;
    passed[i] = relu && v <= 0 ? 0 : g[i];
  }
  r.grad_beta.assign(c, 0);
  r.grad_gamma.assign(c, 0);
  for (int64_t i = 0; i < m * c; ++i) {
    const int64_t j = i % c;
    r.grad_beta[j] += passed[i];
    r.grad_gamma[j] += passed[i] * (x[i] - r.mean[j]) / std::sqrt(r.variance[j] + eps);
  }
  r.grad_x.resize(m * c);
  for (int64_t i = 0; i < m * c; ++i) {
    const int64_t j = i % c;
    const double inv_std = 1 / std::sqrt(r.variance[j] + eps);
    const double xhat = (x[i] - r.mean[j]) * inv_std;
    r.grad_x[i] =
        constant_statistics
            ? passed[i] * gamma[j] * inv_std
            : gamma[j] * inv_std * (passed[i] - r.grad_beta[j] / m - xhat * r.grad_gamma[j] / m);
  }
  return r;
}

::testing::AssertionResult NearBn(const std::vector<float>& got, const std::vector<double>& want,
                                  double atol, double rtol, const char* what) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]))) {
      return ::testing::AssertionFailure()
             << what << " element " << i << ": got " << got[i] << ", want " << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// Element i's bit of the fused ReLU's mask, for c channels (BatchNormReluMaskBytes: a bit an
// element where the AVX-512 loops run, a byte otherwise).
bool MaskBit(const std::vector<uint8_t>& mask, int64_t i, int64_t c) {
  if (!internal::UsesAvx512BatchNorm(c)) return mask[i] != 0;
  return (mask[i / 8] >> (i % 8)) & 1;
}

struct BnCase {
  int64_t m, c;
};

// Every test runs twice: with the AVX-512 loops allowed (taken where the CPU has AVX512-BF16 and
// the channels are 16, 32, 64 or 128) and with the portable loops only.
class CpuBatchNormKernelsTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { internal::AllowAvx512BatchNorm(GetParam()); }
  void TearDown() override { internal::AllowAvx512BatchNorm(true); }
};

TEST_P(CpuBatchNormKernelsTest, MatchADoublePrecisionBatchNorm) {
  // The unrolled channel counts and others; one chunk (a few rows) and many (4096 / c rows each,
  // at least 32).
  for (const BnCase& k : {BnCase{1, 16}, BnCase{7, 16}, BnCase{1000, 16}, BnCase{600, 32},
                          BnCase{333, 64}, BnCase{90, 128}, BnCase{50, 3}, BnCase{700, 24},
                          BnCase{129, 100}, BnCase{64, 300}, BnCase{5, 5000}, BnCase{70, 3000}}) {
    for (bool relu : {false, true}) {
      SCOPED_TRACE("m " + std::to_string(k.m) + " c " + std::to_string(k.c) +
                   (relu ? " relu" : ""));
      const int64_t n = k.m * k.c;
      const std::vector<float> x = BnRandom(n, 1, -2, 3), g = BnRandom(n, 2, -1, 1);
      const std::vector<float> gamma = BnRandom(k.c, 3, 0.5f, 1.5f), beta = BnRandom(k.c, 4, -1, 1);
      const float eps = 1e-3f;
      std::vector<float> y(n), mean(k.c), variance(k.c);
      std::vector<uint8_t> mask(relu ? n : 0);
      BatchNormTrainingF32(x.data(), k.m, k.c, gamma.data(), beta.data(), eps, y.data(),
                           mean.data(), variance.data(), relu ? mask.data() : nullptr);
      const BnReference want = ComputeBn(x, g, k.m, k.c, gamma, beta, eps, relu, false);
      EXPECT_TRUE(NearBn(mean, want.mean, 1e-6, 1e-5, "mean"));
      EXPECT_TRUE(NearBn(variance, want.variance, 1e-6, 1e-5, "variance"));
      EXPECT_TRUE(NearBn(y, want.y, 1e-5, 1e-4, "y"));
      std::vector<float> gx(n), gg(k.c), gb(k.c);
      BatchNormBackwardF32(x.data(), g.data(), relu ? mask.data() : nullptr, k.m, k.c, gamma.data(),
                           mean.data(), variance.data(), eps, false, gx.data(), gg.data(),
                           gb.data());
      EXPECT_TRUE(NearBn(gb, want.grad_beta, 1e-4, 1e-4, "grad_beta"));
      EXPECT_TRUE(NearBn(gg, want.grad_gamma, 1e-4, 1e-4, "grad_gamma"));
      EXPECT_TRUE(NearBn(gx, want.grad_x, 1e-5, 1e-3, "grad_x"));
      if (relu) continue;
      // Constant statistics (inference's backward), and inference's forward with the batch's.
      const BnReference fixed = ComputeBn(x, g, k.m, k.c, gamma, beta, eps, false, true);
      BatchNormBackwardF32(x.data(), g.data(), nullptr, k.m, k.c, gamma.data(), mean.data(),
                           variance.data(), eps, true, gx.data(), gg.data(), gb.data());
      EXPECT_TRUE(NearBn(gx, fixed.grad_x, 1e-5, 1e-4, "constant grad_x"));
      EXPECT_TRUE(NearBn(gg, fixed.grad_gamma, 1e-4, 1e-4, "constant grad_gamma"));
      EXPECT_TRUE(NearBn(gb, fixed.grad_beta, 1e-4, 1e-4, "constant grad_beta"));
      // Moving statistics other than the batch's: xhat and the gradients follow them.
      const std::vector<float> moving_mean = BnRandom(k.c, 11, -1, 1),
                               moving_var = BnRandom(k.c, 12, 0.5f, 2);
      BatchNormBackwardF32(x.data(), g.data(), nullptr, k.m, k.c, gamma.data(), moving_mean.data(),
                           moving_var.data(), eps, true, gx.data(), gg.data(), gb.data());
      std::vector<double> want_gx(n), want_gg(k.c, 0), want_gb(k.c, 0);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t j = i % k.c;
        const double inv_std = 1 / std::sqrt(double(moving_var[j]) + eps);
        want_gx[i] = g[i] * gamma[j] * inv_std;
        want_gb[j] += g[i];
        want_gg[j] += g[i] * (x[i] - double(moving_mean[j])) * inv_std;
      }
      EXPECT_TRUE(NearBn(gx, want_gx, 1e-5, 1e-4, "moving grad_x"));
      EXPECT_TRUE(NearBn(gg, want_gg, 1e-4, 1e-4, "moving grad_gamma"));
      EXPECT_TRUE(NearBn(gb, want_gb, 1e-4, 1e-4, "moving grad_beta"));
      std::vector<float> yi(n);
      BatchNormInferenceF32(x.data(), k.m, k.c, gamma.data(), beta.data(), mean.data(),
                            variance.data(), eps, yi.data());
      EXPECT_EQ(yi, y);
    }
  }
}

// The sums run over fixed chunks of rows combined in order: one thread or two, the same bits.
TEST_P(CpuBatchNormKernelsTest, GiveTheSameBitsOnAnyThreadCount) {
  const int64_t m = 64 * 28 * 28, c = 16, n = m * c;
  const std::vector<float> x = BnRandom(n, 5, -2, 3), g = BnRandom(n, 6, -1, 1);
  const std::vector<float> gamma = BnRandom(c, 7, 0.5f, 1.5f), beta = BnRandom(c, 8, -1, 1);
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 3}) {
    SetCpuThreads(threads);
    std::vector<float> y(n), mean(c), variance(c), gx(n), gg(c), gb(c);
    std::vector<uint8_t> mask(n);
    BatchNormTrainingF32(x.data(), m, c, gamma.data(), beta.data(), 1e-3f, y.data(), mean.data(),
                         variance.data(), mask.data());
    BatchNormBackwardF32(x.data(), g.data(), mask.data(), m, c, gamma.data(), mean.data(),
                         variance.data(), 1e-3f, false, gx.data(), gg.data(), gb.data());
    std::vector<float> all = y;
    for (const std::vector<float>* v : {&mean, &variance, &gx, &gg, &gb}) {
      all.insert(all.end(), v->begin(), v->end());
    }
    results.push_back(all);
  }
  SetCpuThreads(0);
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

// The fused ReLU against the plain passes with a ReLU after them, bit for bit, on the unrolled
// channel counts and a generic one: y = max(y, 0), the mask where y > 0, and the backward through
// the mask as the plain backward given the gradient zeroed where the ReLU cut.
TEST_P(CpuBatchNormKernelsTest, FusedReluGivesTheBitsOfThePlainPassesAndARelu) {
  for (int64_t c : {16, 32, 64, 128, 24}) {
    SCOPED_TRACE("c " + std::to_string(c));
    const int64_t m = 700, n = m * c;
    const std::vector<float> x = BnRandom(n, 13, -2, 3), g = BnRandom(n, 14, -1, 1);
    const std::vector<float> gamma = BnRandom(c, 15, 0.5f, 1.5f), beta = BnRandom(c, 16, -1, 1);
    std::vector<float> y(n), yr(n), mean(c), variance(c), mean_r(c), variance_r(c);
    std::vector<uint8_t> mask(n);
    BatchNormTrainingF32(x.data(), m, c, gamma.data(), beta.data(), 1e-3f, y.data(), mean.data(),
                         variance.data(), nullptr);
    BatchNormTrainingF32(x.data(), m, c, gamma.data(), beta.data(), 1e-3f, yr.data(), mean_r.data(),
                         variance_r.data(), mask.data());
    EXPECT_EQ(mean_r, mean);
    EXPECT_EQ(variance_r, variance);
    std::vector<float> cut = g;
    int64_t passed = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(yr[i], y[i] > 0 ? y[i] : 0.0f) << i;
      ASSERT_EQ(MaskBit(mask, i, c), y[i] > 0) << i;
      if (y[i] <= 0) cut[i] = 0;
      passed += MaskBit(mask, i, c);
    }
    EXPECT_EQ(BatchNormReluMaskBytes(m, c), internal::UsesAvx512BatchNorm(c) ? n / 8 : n);
    EXPECT_GT(passed, n / 4);
    EXPECT_LT(passed, 3 * n / 4);
    std::vector<float> gx(n), gg(c), gb(c), ux(n), ug(c), ub(c);
    BatchNormBackwardF32(x.data(), g.data(), mask.data(), m, c, gamma.data(), mean.data(),
                         variance.data(), 1e-3f, false, gx.data(), gg.data(), gb.data());
    BatchNormBackwardF32(x.data(), cut.data(), nullptr, m, c, gamma.data(), mean.data(),
                         variance.data(), 1e-3f, false, ux.data(), ug.data(), ub.data());
    EXPECT_EQ(gx, ux);
    EXPECT_EQ(gg, ug);
    EXPECT_EQ(gb, ub);
  }
}

// A NaN in channel 0's data makes its statistics and every output of it NaN, and the ReLU keeps
// them (it made them 0); the other channels are untouched. 16 channels take the AVX-512 loop
// where the CPU has one, 24 the portable loop.
TEST_P(CpuBatchNormKernelsTest, FusedReluKeepsNaN) {
  for (int64_t c : {16, 24}) {
    SCOPED_TRACE("c " + std::to_string(c));
    const int64_t m = 40, n = m * c;
    std::vector<float> x = BnRandom(n, 17, -2, 3);
    x[0] = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> gamma(c, 1.0f), beta(c, 0.0f);
    std::vector<float> y(n), mean(c), variance(c);
    std::vector<uint8_t> mask(n);
    BatchNormTrainingF32(x.data(), m, c, gamma.data(), beta.data(), 1e-3f, y.data(), mean.data(),
                         variance.data(), mask.data());
    for (int64_t i = 0; i < n; ++i) {
      if (i % c == 0) {
        ASSERT_TRUE(std::isnan(y[i])) << i;
        EXPECT_FALSE(MaskBit(mask, i, c)) << i;
      } else {
        ASSERT_FALSE(std::isnan(y[i])) << i;
        ASSERT_GE(y[i], 0.0f) << i;
      }
    }
  }
}

// Activations far from 0 (mean 1000, deviation 0.01): the variance about each chunk's mean keeps
// its digits, where a sum of squares minus the squared mean would lose them all in float.
TEST_P(CpuBatchNormKernelsTest, KeepTheVarianceOfDataFarFromZero) {
  for (int64_t c : {32, 24}) {
    SCOPED_TRACE("c " + std::to_string(c));
    const int64_t m = 5000, n = m * c;
    std::vector<float> x = BnRandom(n, 9, -0.01f, 0.01f);
    for (float& v : x) v += 1000.0f;
    const std::vector<float> gamma(c, 1.0f), beta(c, 0.0f), g = BnRandom(n, 10, -1, 1);
    std::vector<float> y(n), mean(c), variance(c);
    BatchNormTrainingF32(x.data(), m, c, gamma.data(), beta.data(), 0.0f, y.data(), mean.data(),
                         variance.data(), nullptr);
    const BnReference want = ComputeBn(x, g, m, c, gamma, beta, 0.0, false, false);
    EXPECT_TRUE(NearBn(variance, want.variance, 0, 3e-4, "variance"));
    // y about the float mean the kernel gives (x - mean is then exact): to float's rounding.
    std::vector<double> want_y(n);
    for (int64_t i = 0; i < n; ++i) {
      want_y[i] = (static_cast<double>(x[i]) - mean[i % c]) / std::sqrt(variance[i % c]);
    }
    EXPECT_TRUE(NearBn(y, want_y, 1e-5, 1e-5, "y"));
  }
}

// bfloat16 data: every result is the float32 kernels' on the widened data (the same statistics,
// the same mask), rounded once to bfloat16; on one chunk and many, unrolled channel counts and
// others, with and without the ReLU, and with constant statistics.
TEST_P(CpuBatchNormKernelsTest, BFloat16GivesTheFloat32ResultRoundedOnce) {
  auto to_bf16 = [](const std::vector<float>& v) {
    std::vector<uint16_t> out(v.size());
    FloatToBFloat16(v.data(), out.data(), static_cast<int64_t>(v.size()));
    return out;
  };
  auto widen = [](const std::vector<uint16_t>& v) {
    std::vector<float> out(v.size());
    BFloat16ToFloat(v.data(), out.data(), static_cast<int64_t>(v.size()));
    return out;
  };
  for (const BnCase& k : {BnCase{7, 16}, BnCase{1000, 16}, BnCase{600, 32}, BnCase{333, 64},
                          BnCase{90, 128}, BnCase{700, 24}, BnCase{70, 3000}}) {
    for (bool relu : {false, true}) {
      SCOPED_TRACE("m " + std::to_string(k.m) + " c " + std::to_string(k.c) +
                   (relu ? " relu" : ""));
      const int64_t n = k.m * k.c;
      std::vector<float> x_values = BnRandom(n, 21, -2, 3);
      x_values[2] = std::nanf("");
      const std::vector<uint16_t> x = to_bf16(x_values), g = to_bf16(BnRandom(n, 22, -1, 1));
      const std::vector<float> xf = widen(x), gf = widen(g);
      std::vector<float> gamma = BnRandom(k.c, 23, 0.5f, 1.5f), beta = BnRandom(k.c, 24, -1, 1);
      // Rounding's special cases: a channel whose outputs are denormal (flushed to zero of their
      // sign), one whose outputs overflow bfloat16 to infinity, one of NaNs (made quiet).
      gamma[0] = 1e-39f;
      beta[0] = 0;
      gamma[1] = 1e30f;
      beta[1] = 3.40e38f;  // above bfloat16's largest finite value and its midpoint to 2^128
      std::vector<float> yf(n), mean_f(k.c), var_f(k.c), mean(k.c), var(k.c);
      std::vector<uint16_t> y(n);
      const int64_t mask_bytes = relu ? BatchNormReluMaskBytes(k.m, k.c) : 0;
      std::vector<uint8_t> mask_f(mask_bytes), mask(mask_bytes, 7);
      BatchNormTrainingF32(xf.data(), k.m, k.c, gamma.data(), beta.data(), 1e-3f, yf.data(),
                           mean_f.data(), var_f.data(), relu ? mask_f.data() : nullptr);
      BatchNormTrainingBF16(x.data(), k.m, k.c, gamma.data(), beta.data(), 1e-3f, y.data(),
                            mean.data(), var.data(), relu ? mask.data() : nullptr);
      // Bits (a NaN mean compares unequal as a float).
      auto bits = [](const std::vector<float>& v) {
        std::vector<uint32_t> out(v.size());
        std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
        return out;
      };
      EXPECT_EQ(bits(mean), bits(mean_f));
      EXPECT_EQ(bits(var), bits(var_f));
      EXPECT_EQ(y, to_bf16(yf));
      int64_t flushed = 0, infinite = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (i % k.c == 0 && yf[i] > 0 && yf[i] < 1.1e-38f && y[i] == 0) ++flushed;
        if (i % k.c == 1 && std::isfinite(yf[i]) && y[i] == 0x7f80) ++infinite;
      }
      EXPECT_GT(flushed, 0);
      EXPECT_GT(infinite, 0);
      EXPECT_EQ(mask, mask_f);
      for (bool constant : {false, true}) {
        if (constant && relu) continue;
        SCOPED_TRACE(constant ? "constant statistics" : "batch statistics");
        std::vector<float> gxf(n), ggf(k.c), gbf(k.c), gg(k.c), gb(k.c);
        std::vector<uint16_t> gx(n);
        BatchNormBackwardF32(xf.data(), gf.data(), relu ? mask_f.data() : nullptr, k.m, k.c,
                             gamma.data(), mean.data(), var.data(), 1e-3f, constant, gxf.data(),
                             ggf.data(), gbf.data());
        BatchNormBackwardBF16(x.data(), g.data(), relu ? mask.data() : nullptr, k.m, k.c,
                              gamma.data(), mean.data(), var.data(), 1e-3f, constant, gx.data(),
                              gg.data(), gb.data());
        EXPECT_EQ(gx, to_bf16(gxf));
        EXPECT_EQ(bits(gg), bits(ggf));
        EXPECT_EQ(bits(gb), bits(gbf));
      }
      if (relu) continue;
      std::vector<uint16_t> yi(n);
      BatchNormInferenceBF16(x.data(), k.m, k.c, gamma.data(), beta.data(), mean.data(), var.data(),
                             1e-3f, yi.data());
      EXPECT_EQ(yi, y);
    }
  }
}

// Which loops run: the AVX-512 ones for 16, 32, 64 and 128 channels where the CPU has
// AVX512-BF16 and they are allowed, the portable ones otherwise.
TEST_P(CpuBatchNormKernelsTest, TheAvx512LoopsRunWhereTheCpuAndChannelsAllow) {
  for (int64_t c : {16, 32, 64, 128}) {
    EXPECT_EQ(internal::UsesAvx512BatchNorm(c), GetParam() && CpuHasAvx512Bf16()) << c;
  }
  for (int64_t c : {8, 24, 48, 256}) EXPECT_FALSE(internal::UsesAvx512BatchNorm(c)) << c;
}

INSTANTIATE_TEST_SUITE_P(Loops, CpuBatchNormKernelsTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Avx512WhereTheCpuHasIt" : "Portable";
                         });

}  // namespace
}  // namespace sluice::train::backend::cpu
