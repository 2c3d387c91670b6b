#include "train/backend/cpu/bfloat16_convert.h"

#include <cstring>

#include "train/backend/cpu/cpu_threads.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace sluice::train::backend::cpu {
namespace {

// Elements per chunk: 64 KB of float32, large enough that a chunk outweighs its scheduling.
constexpr int64_t kGrain = 16384;

#if defined(__x86_64__)
bool HasAvx512Bf16() {
  // Every CPU with AVX512-BF16 has BW and VL too; the tail's masked store needs them.
  static const bool has = __builtin_cpu_supports("avx512bf16") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return has;
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void FloatToBFloat16Avx512(
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
#endif

}  // namespace

namespace internal {

uint16_t FloatToBFloat16Portable(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const uint32_t exponent = u & 0x7f800000u;
  if (exponent == 0) return static_cast<uint16_t>((u >> 16) & 0x8000u);  // zero or denormal
  if (exponent == 0x7f800000u) {
    // Infinity keeps its bits; a NaN is truncated and made quiet.
    const bool nan = (u & 0x007fffffu) != 0;
    return static_cast<uint16_t>((u >> 16) | (nan ? 0x0040u : 0u));
  }
  u += 0x7fffu + ((u >> 16) & 1u);  // to nearest even; the largest finite values round to inf
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace internal

void FloatToBFloat16(const float* x, uint16_t* y, int64_t n) {
  ParallelFor(n, kGrain, [&](int64_t begin, int64_t end) {
#if defined(__x86_64__)
    if (HasAvx512Bf16()) return FloatToBFloat16Avx512(x + begin, y + begin, end - begin);
#endif
    for (int64_t i = begin; i < end; ++i) y[i] = internal::FloatToBFloat16Portable(x[i]);
  });
}

void BFloat16ToFloat(const uint16_t* x, float* y, int64_t n) {
  ParallelFor(n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const uint32_t u = static_cast<uint32_t>(x[i]) << 16;
      std::memcpy(y + i, &u, sizeof u);
    }
  });
}

}  // namespace sluice::train::backend::cpu
