// The CpuBackend's float32 batch norm over x [m, c] (NHWC rows, channels innermost), with the
// ReLU after it fused where asked. oneDNN 2.6's NHWC batch norm ran at 10-20 GB/s on activations
// that sit in the cache (resnet-20's 3.2 MB [64, 28, 28, 16]: 0.65 ms forward, 16% of a step;
// docs/benchmarks.md). Here the statistics take one pass over x: each chunk of rows, small enough
// for L1, gets its mean and its centred sum of squares in two passes over itself, and the chunks
// combine exactly as Chan et al.'s parallel variance does. bfloat16 stays with oneDNN.
//
// Every sum runs over fixed chunks of rows combined in chunk order: the bits depend on m and c
// only, never on the thread count.

#include "train/backend/cpu/cpu_batch_norm_kernels.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "train/backend/cpu/cpu_kernel_util.h"
#include "train/backend/cpu/cpu_threads.h"

namespace sluice::train::backend::cpu {
namespace {

// Rows per chunk: about 16 KB of x, so that a chunk's second pass reads L1; at least 32, so that
// the chunks' sums (combined on one thread) stay a 32nd of x however wide its rows.
int64_t ChunkRows(int64_t c) { return std::max<int64_t>(32, 4096 / std::max<int64_t>(c, 1)); }

// The chunks of m rows of c channels: `rows` rows each (the last fewer), `count` of them.
struct Chunks {
  int64_t rows, count;
};
Chunks ChunksOf(int64_t m, int64_t c) {
  const int64_t rows = ChunkRows(c);
  return {rows, (m + rows - 1) / rows};
}

// Runs fn(chunk, row_begin, row_end) for every chunk, chunks spread over the kernel threads.
template <typename Fn>
void ForEachChunk(int64_t m, int64_t c, const Fn& fn) {
  const Chunks chunking = ChunksOf(m, c);
  const int64_t rows = chunking.rows, chunks = chunking.count;
  ParallelFor(chunks, std::max<int64_t>(1, kGrain / (rows * c)), [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) fn(k, k * rows, std::min(m, (k + 1) * rows));
  });
}

// g where the ReLU's mask is set, else +0: by bits, so that the loops stay branch-free (and
// vectorised) and a NaN gradient at a dead unit gives 0, as a ReLU's backward does.
inline float Passed(float g, uint8_t mask) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(g) & (0u - static_cast<uint32_t>(mask != 0)));
}

// The loops below take the channel count as a template argument where it is one of the common
// ones (kC > 0; c is then ignored), so that a row's inner loop is unrolled and the per-channel
// sums stay in registers; kC == 0 loops over c.
template <typename Fn>
void WithChannels(int64_t c, const Fn& fn) {
  switch (c) {
    case 16:
      return fn(std::integral_constant<int, 16>());
    case 32:
      return fn(std::integral_constant<int, 32>());
    case 64:
      return fn(std::integral_constant<int, 64>());
    default:
      return fn(std::integral_constant<int, 0>());
  }
}

// p[0, kC) copied into `local` where kC > 0, so that the unrolled loop reading it keeps it in
// registers; p itself where kC == 0.
template <int kC>
const float* Hoisted(const float* p, float* local) {
  if constexpr (kC == 0) return p;
  for (int j = 0; j < kC; ++j) local[j] = p[j];
  return local;
}

// sum[j] = the sum of x[r, j] - x[r0, j] over rows [r0, r1): about the chunk's first row, so
// that data far from 0 keeps its digits.
template <int kC>
SLUICE_KERNEL_CLONES void SumRowsAboutTheFirst(const float* __restrict x, int64_t r0, int64_t r1,
                                               int64_t c, float* __restrict sum) {
  if constexpr (kC > 0) c = kC;
  float acc[kC > 0 ? kC : 1], first[kC > 0 ? kC : 1];
  float* a = kC > 0 ? acc : sum;
  const float* f = Hoisted<kC>(x + r0 * c, first);
  for (int64_t j = 0; j < c; ++j) a[j] = 0.0f;
  for (int64_t r = r0 + 1; r < r1; ++r) {
    const float* row = x + r * c;
    for (int64_t j = 0; j < c; ++j) a[j] += row[j] - f[j];
  }
  if constexpr (kC > 0) {
    for (int64_t j = 0; j < c; ++j) sum[j] = acc[j];
  }
}

// sq[j] = the sum of (x[r, j] - mean[j])^2 over rows [r0, r1).
template <int kC>
SLUICE_KERNEL_CLONES void SumCentredSquares(const float* __restrict x, int64_t r0, int64_t r1,
                                            int64_t c, const float* __restrict mean,
                                            float* __restrict sq) {
  if constexpr (kC > 0) c = kC;
  float acc[kC > 0 ? kC : 1], mu[kC > 0 ? kC : 1];
  float* a = kC > 0 ? acc : sq;
  const float* m = Hoisted<kC>(mean, mu);
  for (int64_t j = 0; j < c; ++j) a[j] = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    const float* row = x + r * c;
    for (int64_t j = 0; j < c; ++j) {
      const float d = row[j] - m[j];
      a[j] += d * d;
    }
  }
  if constexpr (kC > 0) {
    for (int64_t j = 0; j < c; ++j) sq[j] = acc[j];
  }
}

// y = (x - mean) scale + beta per channel, then max(y, 0) and the mask where `mask` is given.
// (x - mean first: x scale + (beta - mean scale) would cancel where |mean| >> the deviation.)
template <int kC>
SLUICE_KERNEL_CLONES void NormalizeRows(const float* __restrict x, int64_t r0, int64_t r1,
                                        int64_t c, const float* __restrict mean,
                                        const float* __restrict scale, const float* __restrict beta,
                                        float* __restrict y, uint8_t* __restrict mask) {
  if constexpr (kC > 0) c = kC;
  for (int64_t r = r0; r < r1; ++r) {
    const float* in = x + r * c;
    float* out = y + r * c;
    if (mask == nullptr) {
      for (int64_t j = 0; j < c; ++j) out[j] = (in[j] - mean[j]) * scale[j] + beta[j];
    } else {
      uint8_t* mk = mask + r * c;
      for (int64_t j = 0; j < c; ++j) {
        const float v = (in[j] - mean[j]) * scale[j] + beta[j];
        out[j] = v > 0.0f ? v : 0.0f;
        mk[j] = v > 0.0f ? 1 : 0;
      }
    }
  }
}

// gb[j] = the sum of g'[r, j] and gx[j] = the sum of g'[r, j] (x[r, j] - mean[j]) over rows
// [r0, r1), g' = g masked by the ReLU's mask.
template <int kC>
SLUICE_KERNEL_CLONES void SumGradientRows(const float* __restrict x, const float* __restrict g,
                                          const uint8_t* __restrict mask, int64_t r0, int64_t r1,
                                          int64_t c, const float* __restrict mean,
                                          float* __restrict gb, float* __restrict gx) {
  if constexpr (kC > 0) c = kC;
  float acc_b[kC > 0 ? kC : 1], acc_x[kC > 0 ? kC : 1], mu[kC > 0 ? kC : 1];
  float* ab = kC > 0 ? acc_b : gb;
  float* ax = kC > 0 ? acc_x : gx;
  const float* m = Hoisted<kC>(mean, mu);
  for (int64_t j = 0; j < c; ++j) ab[j] = ax[j] = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * c;
    const float* gr = g + r * c;
    if (mask == nullptr) {
      for (int64_t j = 0; j < c; ++j) {
        ab[j] += gr[j];
        ax[j] += gr[j] * (xr[j] - m[j]);
      }
    } else {
      const uint8_t* mk = mask + r * c;
      for (int64_t j = 0; j < c; ++j) {
        const float gj = Passed(gr[j], mk[j]);
        ab[j] += gj;
        ax[j] += gj * (xr[j] - m[j]);
      }
    }
  }
  if constexpr (kC > 0) {
    for (int64_t j = 0; j < c; ++j) {
      gb[j] = acc_b[j];
      gx[j] = acc_x[j];
    }
  }
}

// grad_x = g' a + (x - mean) b + d per channel (a, b, d from the parameter gradients); g' a
// alone where b is null (constant statistics: x does not enter, an infinite x gives no NaN).
template <int kC>
SLUICE_KERNEL_CLONES void InputGradRows(const float* __restrict x, const float* __restrict g,
                                        const uint8_t* __restrict mask, int64_t r0, int64_t r1,
                                        int64_t c, const float* __restrict mean,
                                        const float* __restrict a, const float* __restrict b,
                                        const float* __restrict d, float* __restrict gx) {
  if constexpr (kC > 0) c = kC;
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * c;
    const float* gr = g + r * c;
    float* out = gx + r * c;
    if (b == nullptr) {
      for (int64_t j = 0; j < c; ++j) {
        out[j] = (mask == nullptr ? gr[j] : Passed(gr[j], mask[r * c + j])) * a[j];
      }
    } else if (mask == nullptr) {
      for (int64_t j = 0; j < c; ++j) out[j] = gr[j] * a[j] + ((xr[j] - mean[j]) * b[j] + d[j]);
    } else {
      const uint8_t* mk = mask + r * c;
      for (int64_t j = 0; j < c; ++j) {
        const float gj = Passed(gr[j], mk[j]);
        out[j] = gj * a[j] + ((xr[j] - mean[j]) * b[j] + d[j]);
      }
    }
  }
}

float InvStd(float variance, float epsilon) { return 1.0f / std::sqrt(variance + epsilon); }

// Normalises with the statistics given: scale = gamma inv_std.
void Normalize(const float* x, int64_t m, int64_t c, const float* mean, const float* variance,
               const float* gamma, const float* beta, float epsilon, float* y, uint8_t* mask) {
  std::vector<float> scale(c);
  for (int64_t j = 0; j < c; ++j) scale[j] = gamma[j] * InvStd(variance[j], epsilon);
  WithChannels(c, [&](auto kc) {
    ForEachChunk(m, c, [&](int64_t, int64_t r0, int64_t r1) {
      NormalizeRows<decltype(kc)::value>(x, r0, r1, c, mean, scale.data(), beta, y, mask);
    });
  });
}

}  // namespace

void BatchNormTrainingF32(const float* x, int64_t m, int64_t c, const float* gamma,
                          const float* beta, float epsilon, float* y, float* mean, float* variance,
                          uint8_t* relu_mask) {
  if (m == 0 || c == 0) {
    std::fill(mean, mean + c, 0.0f);
    std::fill(variance, variance + c, 0.0f);
    return;
  }
  const Chunks chunking = ChunksOf(m, c);
  const int64_t rows = chunking.rows, chunks = chunking.count;
  // Per chunk: its mean (summed about its first row), then its sum of squares about that mean
  // (the chunk still in L1).
  std::vector<float> chunk_mean(chunks * c, 0.0f), chunk_m2(chunks * c, 0.0f);
  WithChannels(c, [&](auto kc) {
    ForEachChunk(m, c, [&](int64_t k, int64_t r0, int64_t r1) {
      float* cm = chunk_mean.data() + k * c;
      SumRowsAboutTheFirst<decltype(kc)::value>(x, r0, r1, c, cm);
      const float inv_n = 1.0f / static_cast<float>(r1 - r0);
      for (int64_t j = 0; j < c; ++j) cm[j] = x[r0 * c + j] + cm[j] * inv_n;
      SumCentredSquares<decltype(kc)::value>(x, r0, r1, c, cm, chunk_m2.data() + k * c);
    });
  });
  // Chan et al.: the mean of the chunks' means weighted by their rows, and
  // M2 = sum M2_k + sum n_k (mean_k - mean)^2, in double over the few chunks.
  std::vector<double> total_mean(c, 0.0), m2(c, 0.0);
  for (int64_t k = 0; k < chunks; ++k) {
    const double n_k = static_cast<double>(std::min(m, (k + 1) * rows) - k * rows);
    for (int64_t j = 0; j < c; ++j) total_mean[j] += n_k * chunk_mean[k * c + j];
  }
  for (int64_t j = 0; j < c; ++j) total_mean[j] /= static_cast<double>(m);
  for (int64_t k = 0; k < chunks; ++k) {
    const double n_k = static_cast<double>(std::min(m, (k + 1) * rows) - k * rows);
    for (int64_t j = 0; j < c; ++j) {
      const double d = chunk_mean[k * c + j] - total_mean[j];
      m2[j] += chunk_m2[k * c + j] + n_k * d * d;
    }
  }
  for (int64_t j = 0; j < c; ++j) {
    mean[j] = static_cast<float>(total_mean[j]);
    variance[j] = static_cast<float>(m2[j] / static_cast<double>(m));
  }
  Normalize(x, m, c, mean, variance, gamma, beta, epsilon, y, relu_mask);
}

void BatchNormInferenceF32(const float* x, int64_t m, int64_t c, const float* gamma,
                           const float* beta, const float* mean, const float* variance,
                           float epsilon, float* y) {
  if (m == 0 || c == 0) return;
  Normalize(x, m, c, mean, variance, gamma, beta, epsilon, y, nullptr);
}

void BatchNormBackwardF32(const float* x, const float* grad_y, const uint8_t* relu_mask, int64_t m,
                          int64_t c, const float* gamma, const float* mean, const float* variance,
                          float epsilon, bool statistics_are_constant, float* grad_x,
                          float* grad_gamma, float* grad_beta) {
  if (c == 0) return;
  if (m == 0) {
    std::fill(grad_gamma, grad_gamma + c, 0.0f);
    std::fill(grad_beta, grad_beta + c, 0.0f);
    return;
  }
  const int64_t chunks = ChunksOf(m, c).count;
  std::vector<float> chunk_gb(chunks * c, 0.0f), chunk_gx(chunks * c, 0.0f);
  WithChannels(c, [&](auto kc) {
    ForEachChunk(m, c, [&](int64_t k, int64_t r0, int64_t r1) {
      SumGradientRows<decltype(kc)::value>(x, grad_y, relu_mask, r0, r1, c, mean,
                                           chunk_gb.data() + k * c, chunk_gx.data() + k * c);
    });
  });
  // The chunks' sums in chunk order, in double, reading them row by row.
  std::vector<double> sum_g(c, 0.0), sum_gx(c, 0.0);
  for (int64_t k = 0; k < chunks; ++k) {
    for (int64_t j = 0; j < c; ++j) {
      sum_g[j] += chunk_gb[k * c + j];
      sum_gx[j] += chunk_gx[k * c + j];
    }
  }
  std::vector<float> a(c), b(c), d(c);
  for (int64_t j = 0; j < c; ++j) {
    const float inv_std = InvStd(variance[j], epsilon);
    grad_beta[j] = static_cast<float>(sum_g[j]);
    grad_gamma[j] = static_cast<float>(sum_gx[j]) * inv_std;
    // grad_x = gamma inv_std (g' - grad_beta / m - xhat grad_gamma / m), xhat = (x - mean)
    // inv_std: g' a + (x - mean) b + d. With constant statistics, g' gamma inv_std.
    a[j] = gamma[j] * inv_std;
    const float inv_m = 1.0f / static_cast<float>(m);
    b[j] = -a[j] * inv_std * grad_gamma[j] * inv_m;
    d[j] = -a[j] * grad_beta[j] * inv_m;
  }
  WithChannels(c, [&](auto kc) {
    ForEachChunk(m, c, [&](int64_t, int64_t r0, int64_t r1) {
      InputGradRows<decltype(kc)::value>(x, grad_y, relu_mask, r0, r1, c, mean, a.data(),
                                         statistics_are_constant ? nullptr : b.data(), d.data(),
                                         grad_x);
    });
  });
}

}  // namespace sluice::train::backend::cpu
