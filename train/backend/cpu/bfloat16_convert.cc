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
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void ToBFloat16Avx512(
    const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512bh r = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
    _mm512_storeu_si512(y + i, reinterpret_cast<__m512i>(r));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16{0xffff} : __mmask16((1u << (n - i)) - 1);
    const __m256bh r = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i));
    _mm256_mask_storeu_epi16(y + i, m, reinterpret_cast<__m256i>(r));
  }
}

// The widening: GCC vectorises the portable shift with the baseline's 128-bit registers only.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void ToFloatAvx512(const uint16_t* x, float* y,
                                                                        int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16{0xffff} : __mmask16((1u << (n - i)) - 1);
    // The maskz forms throughout: GCC 12's plain ones warn of an uninitialised (unused) source.
    const __m512i wide = _mm512_maskz_cvtepu16_epi32(m, _mm256_maskz_loadu_epi16(m, x + i));
    _mm512_mask_storeu_ps(y + i, m, _mm512_castsi512_ps(_mm512_maskz_slli_epi32(m, wide, 16)));
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

void FloatToBFloat16Run(const float* x, uint16_t* y, int64_t n) {
#if defined(__x86_64__)
  if (CpuHasAvx512Bf16()) return ToBFloat16Avx512(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = internal::FloatToBFloat16Portable(x[i]);
}

void FloatToBFloat16(const float* x, uint16_t* y, int64_t n) {
  ParallelFor(n, kConvertGrain, [&](int64_t begin, int64_t end) {
    FloatToBFloat16Run(x + begin, y + begin, end - begin);
  });
}

void BFloat16ToFloat(const uint16_t* x, float* y, int64_t n) {
  ParallelFor(n, kConvertGrain, [&](int64_t begin, int64_t end) {
    BFloat16ToFloatRun(x + begin, y + begin, end - begin);
  });
}

void BFloat16ToFloatRun(const uint16_t* x, float* y, int64_t n) {
#if defined(__x86_64__)
  if (CpuHasAvx512Bf16()) return ToFloatAvx512(x, y, n);
#endif
  // The 16 bits become the high half: a shift the compiler vectorises.
  for (int64_t i = 0; i < n; ++i) y[i] = std::bit_cast<float>(static_cast<uint32_t>(x[i]) << 16);
}

}  // namespace sluice::train::backend::cpu
