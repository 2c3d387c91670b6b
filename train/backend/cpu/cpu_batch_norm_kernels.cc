// The CpuBackend's batch norm over x [m, c] (NHWC rows, channels innermost), float32 or
// bfloat16, with the ReLU after it fused where asked. oneDNN 2.6's NHWC batch norm ran at 10-20
// GB/s on activations that sit in the cache (resnet-20's 3.2 MB [64, 28, 28, 16]: 0.65 ms
// forward, 16% of a step; docs/benchmarks.md). Here the statistics take one pass over x: each
// chunk of rows, small enough for L1, gets its mean and its centred sum of squares in two passes
// over itself, and the chunks combine exactly as Chan et al.'s parallel variance does. bfloat16
// data (mixed_bfloat16's activations) runs the same loops, widened on load and rounded once on
// store.
//
// Every sum runs over fixed chunks of rows combined in chunk order: the bits never depend on the
// thread count. They do depend on the CPU and the compiler: the AVX-512 loops and GCC's AVX-512
// clone fuse multiply-adds, the AVX2 and baseline clones (and clang's builds) do not.

#include "train/backend/cpu/cpu_batch_norm_kernels.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "train/backend/compute_precision.h"
#include "train/backend/cpu/cpu_kernel_util.h"
#include "train/backend/cpu/cpu_threads.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// The portable loops are compiled for AVX-512 and AVX2 as well as the baseline.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SLUICE_BATCH_NORM_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define SLUICE_BATCH_NORM_CLONES
#endif

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

// The data's element types: float, or bfloat16 as its bits (uint16_t), widened exactly on load
// and rounded as AVX512-BF16's VCVTNEPS2BF16 rounds on store (to nearest even, NaNs made quiet,
// denormals flushed to zero: bfloat16_convert.h's rule), branch-free so that loops vectorise.
inline float Widen(float v) { return v; }
inline float Widen(uint16_t v) { return std::bit_cast<float>(static_cast<uint32_t>(v) << 16); }
template <typename T>
inline T Narrow(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    const uint32_t u = std::bit_cast<uint32_t>(v);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (u >> 16) | 0x40u;
    const uint32_t signed_zero = (u >> 16) & 0x8000u;
    const uint32_t r = (u & 0x7fffffffu) > 0x7f800000u ? quiet_nan
                       : (u & 0x7f800000u) == 0        ? signed_zero
                                                       : rounded;
    return static_cast<uint16_t>(r);
  }
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
template <int kC, typename T>
const T* Hoisted(const T* p, T* local) {
  if constexpr (kC == 0) return p;
  for (int j = 0; j < kC; ++j) local[j] = p[j];
  return local;
}

// The row loops in portable C++ (compiled for AVX-512, AVX2 and the baseline), for any channel
// count: kC > 0 is one of WithChannels' counts, unrolled.
template <int kC>
struct GenericRows {
  // sum[j] = the sum of x[r, j] - x[r0, j] over rows [r0, r1): about the chunk's first row, so
  // that data far from 0 keeps its digits.
  template <typename T>
  SLUICE_BATCH_NORM_CLONES static void SumRowsAboutTheFirst(const T* __restrict x, int64_t r0,
                                                            int64_t r1, int64_t c,
                                                            float* __restrict sum) {
    if constexpr (kC > 0) c = kC;
    float acc[kC > 0 ? kC : 1];
    T first[kC > 0 ? kC : 1];
    float* a = kC > 0 ? acc : sum;
    const T* f = Hoisted<kC>(x + r0 * c, first);
    for (int64_t j = 0; j < c; ++j) a[j] = 0.0f;
    for (int64_t r = r0 + 1; r < r1; ++r) {
      const T* row = x + r * c;
      for (int64_t j = 0; j < c; ++j) a[j] += Widen(row[j]) - Widen(f[j]);
    }
    if constexpr (kC > 0) {
      for (int64_t j = 0; j < c; ++j) sum[j] = acc[j];
    }
  }

  // sq[j] = the sum of (x[r, j] - mean[j])^2 over rows [r0, r1).
  template <typename T>
  SLUICE_BATCH_NORM_CLONES static void SumCentredSquares(const T* __restrict x, int64_t r0,
                                                         int64_t r1, int64_t c,
                                                         const float* __restrict mean,
                                                         float* __restrict sq) {
    if constexpr (kC > 0) c = kC;
    float acc[kC > 0 ? kC : 1], mu[kC > 0 ? kC : 1];
    float* a = kC > 0 ? acc : sq;
    const float* m = Hoisted<kC>(mean, mu);
    for (int64_t j = 0; j < c; ++j) a[j] = 0.0f;
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = x + r * c;
      for (int64_t j = 0; j < c; ++j) {
        const float d = Widen(row[j]) - m[j];
        a[j] += d * d;
      }
    }
    if constexpr (kC > 0) {
      for (int64_t j = 0; j < c; ++j) sq[j] = acc[j];
    }
  }

  // y = (x - mean) scale + beta per channel, then max(y, 0) and the mask where `mask` is given.
  // (x - mean first: x scale + (beta - mean scale) would cancel where |mean| >> the deviation.)
  template <typename T>
  SLUICE_BATCH_NORM_CLONES static void NormalizeRows(const T* __restrict x, int64_t r0, int64_t r1,
                                                     int64_t c, const float* __restrict mean,
                                                     const float* __restrict scale,
                                                     const float* __restrict beta, T* __restrict y,
                                                     uint8_t* __restrict mask) {
    if constexpr (kC > 0) c = kC;
    for (int64_t r = r0; r < r1; ++r) {
      const T* in = x + r * c;
      T* out = y + r * c;
      if (mask == nullptr) {
        for (int64_t j = 0; j < c; ++j) {
          out[j] = Narrow<T>((Widen(in[j]) - mean[j]) * scale[j] + beta[j]);
        }
      } else {
        uint8_t* mk = mask + r * c;
        for (int64_t j = 0; j < c; ++j) {
          const float v = (Widen(in[j]) - mean[j]) * scale[j] + beta[j];
          out[j] = Narrow<T>(ReluOf(v));
          mk[j] = v > 0.0f ? 1 : 0;
        }
      }
    }
  }

  // gb[j] = the sum of g'[r, j] and gx[j] = the sum of g'[r, j] (x[r, j] - mean[j]) over rows
  // [r0, r1), g' = g masked by the ReLU's mask.
  template <typename T>
  SLUICE_BATCH_NORM_CLONES static void SumGradientRows(const T* __restrict x, const T* __restrict g,
                                                       const uint8_t* __restrict mask, int64_t r0,
                                                       int64_t r1, int64_t c,
                                                       const float* __restrict mean,
                                                       float* __restrict gb, float* __restrict gx) {
    if constexpr (kC > 0) c = kC;
    float acc_b[kC > 0 ? kC : 1], acc_x[kC > 0 ? kC : 1], mu[kC > 0 ? kC : 1];
    float* ab = kC > 0 ? acc_b : gb;
    float* ax = kC > 0 ? acc_x : gx;
    const float* m = Hoisted<kC>(mean, mu);
    for (int64_t j = 0; j < c; ++j) ab[j] = ax[j] = 0.0f;
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * c;
      const T* gr = g + r * c;
      if (mask == nullptr) {
        for (int64_t j = 0; j < c; ++j) {
          const float gj = Widen(gr[j]);
          ab[j] += gj;
          ax[j] += gj * (Widen(xr[j]) - m[j]);
        }
      } else {
        const uint8_t* mk = mask + r * c;
        for (int64_t j = 0; j < c; ++j) {
          const float gj = Passed(Widen(gr[j]), mk[j]);
          ab[j] += gj;
          ax[j] += gj * (Widen(xr[j]) - m[j]);
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
  template <typename T>
  SLUICE_BATCH_NORM_CLONES static void InputGradRows(
      const T* __restrict x, const T* __restrict g, const uint8_t* __restrict mask, int64_t r0,
      int64_t r1, int64_t c, const float* __restrict mean, const float* __restrict a,
      const float* __restrict b, const float* __restrict d, T* __restrict gx) {
    if constexpr (kC > 0) c = kC;
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * c;
      const T* gr = g + r * c;
      T* out = gx + r * c;
      if (b == nullptr) {
        for (int64_t j = 0; j < c; ++j) {
          const float gj = Widen(gr[j]);
          out[j] = Narrow<T>((mask == nullptr ? gj : Passed(gj, mask[r * c + j])) * a[j]);
        }
      } else if (mask == nullptr) {
        for (int64_t j = 0; j < c; ++j) {
          out[j] = Narrow<T>(Widen(gr[j]) * a[j] + ((Widen(xr[j]) - mean[j]) * b[j] + d[j]));
        }
      } else {
        const uint8_t* mk = mask + r * c;
        for (int64_t j = 0; j < c; ++j) {
          const float gj = Passed(Widen(gr[j]), mk[j]);
          out[j] = Narrow<T>(gj * a[j] + ((Widen(xr[j]) - mean[j]) * b[j] + d[j]));
        }
      }
    }
  }
};

#if defined(__x86_64__)
// The row loops in AVX-512 for 16, 32, 64 or 128 channels (kV vectors of 16 a row), the sums in
// registers, bfloat16 widened by a shift and rounded by VCVTNEPS2BF16. GCC's vectorisation of the
// portable loops on bfloat16 data ran 2-3x slower than oneDNN's batch norm; these run faster
// (docs/benchmarks.md). Run on CPUs with AVX512-BF16 (mixed_bfloat16's requirement), on float32
// and bfloat16 data alike, so that the two give the same numbers there.
#define SLUICE_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
template <int kV>
struct Avx512Rows {
  SLUICE_AVX512_BF16 static __m512 Load(const float* p) { return _mm512_loadu_ps(p); }
  SLUICE_AVX512_BF16 static __m512 Load(const uint16_t* p) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    // The maskz forms: GCC 12's plain ones warn of an uninitialised (unused) source.
    const __m512i wide = _mm512_maskz_cvtepu16_epi32(0xffff, bits);
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, wide, 16));
  }
  SLUICE_AVX512_BF16 static void Store(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
  SLUICE_AVX512_BF16 static void Store(uint16_t* p, __m512 v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)));
  }
  // The ReLU's mask here is a bit an element (BatchNormReluMaskBytes): elements [at, at + 16)
  // are the two bytes at at / 8, their bits in order from the lowest, as a __mmask16's lanes.
  SLUICE_AVX512_BF16 static __mmask16 LoadMask(const uint8_t* mask, int64_t at) {
    uint16_t bits;
    std::memcpy(&bits, mask + at / 8, sizeof bits);
    return bits;
  }
  SLUICE_AVX512_BF16 static void StoreMask(uint8_t* mask, int64_t at, __mmask16 k) {
    const uint16_t bits = k;
    std::memcpy(mask + at / 8, &bits, sizeof bits);
  }
  // g[at, at + 16) where the ReLU's mask (if any) is set, else +0 whatever g (a NaN included).
  template <typename T>
  SLUICE_AVX512_BF16 static __m512 Passed(const T* g, const uint8_t* mask, int64_t at) {
    const __m512 gj = Load(g + at);
    return mask == nullptr ? gj : _mm512_maskz_mov_ps(LoadMask(mask, at), gj);
  }

  template <typename T>
  SLUICE_AVX512_BF16 static void SumRowsAboutTheFirst(const T* x, int64_t r0, int64_t r1, int64_t,
                                                      float* sum) {
    constexpr int64_t c = 16 * kV;
    __m512 acc[kV], first[kV];
    for (int v = 0; v < kV; ++v) {
      acc[v] = _mm512_setzero_ps();
      first[v] = Load(x + r0 * c + 16 * v);
    }
    for (int64_t r = r0 + 1; r < r1; ++r) {
      for (int v = 0; v < kV; ++v) {
        acc[v] = _mm512_add_ps(acc[v], _mm512_sub_ps(Load(x + r * c + 16 * v), first[v]));
      }
    }
    for (int v = 0; v < kV; ++v) _mm512_storeu_ps(sum + 16 * v, acc[v]);
  }

  template <typename T>
  SLUICE_AVX512_BF16 static void SumCentredSquares(const T* x, int64_t r0, int64_t r1, int64_t,
                                                   const float* mean, float* sq) {
    constexpr int64_t c = 16 * kV;
    __m512 acc[kV], mu[kV];
    for (int v = 0; v < kV; ++v) {
      acc[v] = _mm512_setzero_ps();
      mu[v] = _mm512_loadu_ps(mean + 16 * v);
    }
    for (int64_t r = r0; r < r1; ++r) {
      for (int v = 0; v < kV; ++v) {
        const __m512 d = _mm512_sub_ps(Load(x + r * c + 16 * v), mu[v]);
        acc[v] = _mm512_fmadd_ps(d, d, acc[v]);
      }
    }
    for (int v = 0; v < kV; ++v) _mm512_storeu_ps(sq + 16 * v, acc[v]);
  }

  template <typename T>
  SLUICE_AVX512_BF16 static void NormalizeRows(const T* x, int64_t r0, int64_t r1, int64_t,
                                               const float* mean, const float* scale,
                                               const float* beta, T* y, uint8_t* mask) {
    constexpr int64_t c = 16 * kV;
    __m512 mu[kV], sc[kV], be[kV];
    for (int v = 0; v < kV; ++v) {
      mu[v] = _mm512_loadu_ps(mean + 16 * v);
      sc[v] = _mm512_loadu_ps(scale + 16 * v);
      be[v] = _mm512_loadu_ps(beta + 16 * v);
    }
    for (int64_t r = r0; r < r1; ++r) {
      for (int v = 0; v < kV; ++v) {
        const int64_t at = r * c + 16 * v;
        const __m512 out = _mm512_fmadd_ps(_mm512_sub_ps(Load(x + at), mu[v]), sc[v], be[v]);
        if (mask == nullptr) {
          Store(y + at, out);
        } else {
          // As the portable loop's ReluOf: 0 where v <= 0, v elsewhere (a NaN stays); the mask
          // is v > 0 (false for NaN).
          const __m512 zero = _mm512_setzero_ps();
          const __mmask16 k = _mm512_cmp_ps_mask(out, zero, _CMP_GT_OQ);
          const __mmask16 le = _mm512_cmp_ps_mask(out, zero, _CMP_LE_OQ);
          Store(y + at, _mm512_mask_mov_ps(out, le, zero));
          StoreMask(mask, at, k);
        }
      }
    }
  }

  template <typename T>
  SLUICE_AVX512_BF16 static void SumGradientRows(const T* x, const T* g, const uint8_t* mask,
                                                 int64_t r0, int64_t r1, int64_t, const float* mean,
                                                 float* gb, float* gx) {
    constexpr int64_t c = 16 * kV;
    __m512 ab[kV], ax[kV], mu[kV];
    for (int v = 0; v < kV; ++v) {
      ab[v] = ax[v] = _mm512_setzero_ps();
      mu[v] = _mm512_loadu_ps(mean + 16 * v);
    }
    for (int64_t r = r0; r < r1; ++r) {
      for (int v = 0; v < kV; ++v) {
        const int64_t at = r * c + 16 * v;
        const __m512 gj = Passed(g, mask, at);
        ab[v] = _mm512_add_ps(ab[v], gj);
        ax[v] = _mm512_fmadd_ps(gj, _mm512_sub_ps(Load(x + at), mu[v]), ax[v]);
      }
    }
    for (int v = 0; v < kV; ++v) {
      _mm512_storeu_ps(gb + 16 * v, ab[v]);
      _mm512_storeu_ps(gx + 16 * v, ax[v]);
    }
  }

  template <typename T>
  SLUICE_AVX512_BF16 static void InputGradRows(const T* x, const T* g, const uint8_t* mask,
                                               int64_t r0, int64_t r1, int64_t, const float* mean,
                                               const float* a, const float* b, const float* d,
                                               T* gx) {
    constexpr int64_t c = 16 * kV;
    __m512 mu[kV], va[kV], vb[kV], vd[kV];
    for (int v = 0; v < kV; ++v) {
      mu[v] = _mm512_loadu_ps(mean + 16 * v);
      va[v] = _mm512_loadu_ps(a + 16 * v);
      vb[v] = b == nullptr ? _mm512_setzero_ps() : _mm512_loadu_ps(b + 16 * v);
      vd[v] = _mm512_loadu_ps(d + 16 * v);
    }
    for (int64_t r = r0; r < r1; ++r) {
      for (int v = 0; v < kV; ++v) {
        const int64_t at = r * c + 16 * v;
        const __m512 gj = Passed(g, mask, at);
        // Constant statistics (b null): g' a alone, x not read.
        Store(gx + at, b == nullptr
                           ? _mm512_mul_ps(gj, va[v])
                           : _mm512_fmadd_ps(gj, va[v],
                                             _mm512_fmadd_ps(_mm512_sub_ps(Load(x + at), mu[v]),
                                                             vb[v], vd[v])));
      }
    }
  }
};
#endif

std::atomic<bool> avx512_allowed{true};

template <int kC>
constexpr bool IsGenericRows(GenericRows<kC>) {
  return true;
}
template <typename Rows>
constexpr bool IsGenericRows(Rows) {
  return false;
}

// Calls fn(rows) with the row loops for c channels: Avx512Rows where the CPU and c allow,
// else GenericRows.
template <typename Fn>
void WithRows(int64_t c, const Fn& fn) {
#if defined(__x86_64__)
  if (avx512_allowed.load(std::memory_order_relaxed) && CpuHasAvx512Bf16()) {
    switch (c) {
      case 16:
        return fn(Avx512Rows<1>());
      case 32:
        return fn(Avx512Rows<2>());
      case 64:
        return fn(Avx512Rows<4>());
      case 128:
        return fn(Avx512Rows<8>());
      default:
        break;
    }
  }
#endif
  WithChannels(c, [&](auto kc) { fn(GenericRows<decltype(kc)::value>()); });
}

float InvStd(float variance, float epsilon) { return 1.0f / std::sqrt(variance + epsilon); }

// Normalises with the statistics given: scale = gamma inv_std.
template <typename T>
void Normalize(const T* x, int64_t m, int64_t c, const float* mean, const float* variance,
               const float* gamma, const float* beta, float epsilon, T* y, uint8_t* mask) {
  std::vector<float> scale(c);
  for (int64_t j = 0; j < c; ++j) scale[j] = gamma[j] * InvStd(variance[j], epsilon);
  WithRows(c, [&](auto kernels) {
    ForEachChunk(m, c, [&](int64_t, int64_t r0, int64_t r1) {
      kernels.NormalizeRows(x, r0, r1, c, mean, scale.data(), beta, y, mask);
    });
  });
}

template <typename T>
void Training(const T* x, int64_t m, int64_t c, const float* gamma, const float* beta,
              float epsilon, T* y, float* mean, float* variance, uint8_t* relu_mask) {
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
  WithRows(c, [&](auto kernels) {
    ForEachChunk(m, c, [&](int64_t k, int64_t r0, int64_t r1) {
      float* cm = chunk_mean.data() + k * c;
      kernels.SumRowsAboutTheFirst(x, r0, r1, c, cm);
      const float inv_n = 1.0f / static_cast<float>(r1 - r0);
      for (int64_t j = 0; j < c; ++j) cm[j] = Widen(x[r0 * c + j]) + cm[j] * inv_n;
      kernels.SumCentredSquares(x, r0, r1, c, cm, chunk_m2.data() + k * c);
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

template <typename T>
void Backward(const T* x, const T* grad_y, const uint8_t* relu_mask, int64_t m, int64_t c,
              const float* gamma, const float* mean, const float* variance, float epsilon,
              bool statistics_are_constant, T* grad_x, float* grad_gamma, float* grad_beta) {
  if (c == 0) return;
  if (m == 0) {
    std::fill(grad_gamma, grad_gamma + c, 0.0f);
    std::fill(grad_beta, grad_beta + c, 0.0f);
    return;
  }
  const int64_t chunks = ChunksOf(m, c).count;
  std::vector<float> chunk_gb(chunks * c, 0.0f), chunk_gx(chunks * c, 0.0f);
  WithRows(c, [&](auto kernels) {
    ForEachChunk(m, c, [&](int64_t k, int64_t r0, int64_t r1) {
      kernels.SumGradientRows(x, grad_y, relu_mask, r0, r1, c, mean, chunk_gb.data() + k * c,
                              chunk_gx.data() + k * c);
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
  WithRows(c, [&](auto kernels) {
    ForEachChunk(m, c, [&](int64_t, int64_t r0, int64_t r1) {
      kernels.InputGradRows(x, grad_y, relu_mask, r0, r1, c, mean, a.data(),
                            statistics_are_constant ? nullptr : b.data(), d.data(), grad_x);
    });
  });
}

}  // namespace

namespace internal {
void AllowAvx512BatchNorm(bool allowed) {
  avx512_allowed.store(allowed, std::memory_order_relaxed);
}

bool UsesAvx512BatchNorm(int64_t c) {
  bool avx512 = false;
  WithRows(c, [&](auto rows) { avx512 = !IsGenericRows(rows); });
  return avx512;
}
}  // namespace internal

int64_t BatchNormReluMaskBytes(int64_t m, int64_t c) {
  // A bit an element in the AVX-512 loops (c a multiple of 16: whole bytes), a byte in the
  // portable ones, whose loops vectorise over bytes.
  return internal::UsesAvx512BatchNorm(c) ? m * c / 8 : m * c;
}

void BatchNormTrainingF32(const float* x, int64_t m, int64_t c, const float* gamma,
                          const float* beta, float epsilon, float* y, float* mean, float* variance,
                          uint8_t* relu_mask) {
  Training(x, m, c, gamma, beta, epsilon, y, mean, variance, relu_mask);
}

void BatchNormTrainingBF16(const uint16_t* x, int64_t m, int64_t c, const float* gamma,
                           const float* beta, float epsilon, uint16_t* y, float* mean,
                           float* variance, uint8_t* relu_mask) {
  Training(x, m, c, gamma, beta, epsilon, y, mean, variance, relu_mask);
}

void BatchNormInferenceF32(const float* x, int64_t m, int64_t c, const float* gamma,
                           const float* beta, const float* mean, const float* variance,
                           float epsilon, float* y) {
  if (m == 0 || c == 0) return;
  Normalize(x, m, c, mean, variance, gamma, beta, epsilon, y, nullptr);
}

void BatchNormInferenceBF16(const uint16_t* x, int64_t m, int64_t c, const float* gamma,
                            const float* beta, const float* mean, const float* variance,
                            float epsilon, uint16_t* y) {
  if (m == 0 || c == 0) return;
  Normalize(x, m, c, mean, variance, gamma, beta, epsilon, y, nullptr);
}

void BatchNormBackwardF32(const float* x, const float* grad_y, const uint8_t* relu_mask, int64_t m,
                          int64_t c, const float* gamma, const float* mean, const float* variance,
                          float epsilon, bool statistics_are_constant, float* grad_x,
                          float* grad_gamma, float* grad_beta) {
  Backward(x, grad_y, relu_mask, m, c, gamma, mean, variance, epsilon, statistics_are_constant,
           grad_x, grad_gamma, grad_beta);
}

void BatchNormBackwardBF16(const uint16_t* x, const uint16_t* grad_y, const uint8_t* relu_mask,
                           int64_t m, int64_t c, const float* gamma, const float* mean,
                           const float* variance, float epsilon, bool statistics_are_constant,
                           uint16_t* grad_x, float* grad_gamma, float* grad_beta) {
  Backward(x, grad_y, relu_mask, m, c, gamma, mean, variance, epsilon, statistics_are_constant,
           grad_x, grad_gamma, grad_beta);
}

}  // namespace sluice::train::backend::cpu
