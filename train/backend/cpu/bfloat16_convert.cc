#include "train/backend/cpu/bfloat16_convert.h"

#include <bit>

#include "core/float16.h"
#include "train/backend/compute_precision.h"
#include "train/backend/cpu/cpu_threads.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace sluice::train::backend::cpu {
namespace {

// Elements per chunk: 64 KB of float32, large enough that a chunk outweighs its scheduling.
constexpr int64_t kConvertGrain = 16384;

#if defined(__x86_64__)
// `x > 0 ? x : 0`, as relu's float32 kernel: a NaN and -0 give +0.
template <bool kRelu>
__attribute__((target("avx512f"), always_inline)) inline __m512 Prepare(__m512 v) {
  return kRelu ? _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), v) : v;
}

template <bool kRelu>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void ToBFloat16Avx512(
    const float* x, uint16_t* y, int64_t n) {
  constexpr auto load = Prepare<kRelu>;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512bh r =
        _mm512_cvtne2ps_pbh(load(_mm512_loadu_ps(x + i + 16)), load(_mm512_loadu_ps(x + i)));
    _mm512_storeu_si512(y + i, reinterpret_cast<__m512i>(r));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16{0xffff} : __mmask16((1u << (n - i)) - 1);
    const __m256bh r = _mm512_cvtneps_pbh(load(_mm512_maskz_loadu_ps(m, x + i)));
    _mm256_mask_storeu_epi16(y + i, m, reinterpret_cast<__m256i>(r));
  }
}
#endif

}  // namespace

namespace internal {

uint16_t FloatToBFloat16Portable(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  // Zero or denormal: flushed, where core's conversion (TensorFlow's) would round the denormal.
  if ((u & 0x7f800000u) == 0) return static_cast<uint16_t>((u >> 16) & 0x8000u);
  return BFloat16::FromFloat(x);
}

}  // namespace internal

namespace {

template <bool kRelu>
void ToBFloat16Run(const float* x, uint16_t* y, int64_t n) {
#if defined(__x86_64__)
  if (CpuHasAvx512Bf16()) return ToBFloat16Avx512<kRelu>(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) {
    y[i] = internal::FloatToBFloat16Portable(kRelu ? (x[i] > 0 ? x[i] : 0.0f) : x[i]);
  }
}

template <bool kRelu>
void ToBFloat16(const float* x, uint16_t* y, int64_t n) {
  ParallelFor(n, kConvertGrain, [&](int64_t begin, int64_t end) {
    ToBFloat16Run<kRelu>(x + begin, y + begin, end - begin);
  });
}

}  // namespace

void FloatToBFloat16(const float* x, uint16_t* y, int64_t n) { ToBFloat16<false>(x, y, n); }

void ReluToBFloat16(const float* x, uint16_t* y, int64_t n) { ToBFloat16<true>(x, y, n); }

void BFloat16ToFloat(const uint16_t* x, float* y, int64_t n) {
  ParallelFor(n, kConvertGrain, [&](int64_t begin, int64_t end) {
    BFloat16ToFloatRun(x + begin, y + begin, end - begin);
  });
}

void FloatToBFloat16Run(const float* x, uint16_t* y, int64_t n) { ToBFloat16Run<false>(x, y, n); }

void BFloat16ToFloatRun(const uint16_t* x, float* y, int64_t n) {
  // The 16 bits become the high half: a shift the compiler vectorises.
  for (int64_t i = 0; i < n; ++i) y[i] = std::bit_cast<float>(static_cast<uint32_t>(x[i]) << 16);
}

}  // namespace sluice::train::backend::cpu
