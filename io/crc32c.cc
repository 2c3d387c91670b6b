#include "io/crc32c.h"

#include <array>
#include <bit>
#include <cstddef>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SLUICE_CRC32C_X86 1
#else
#define SLUICE_CRC32C_X86 0
#endif

namespace sluice {
namespace {

constexpr uint32_t kPoly = 0x82f63b78;  // CRC-32C, bit-reflected.

// kTable[k][b]: the CRC register after feeding byte b followed by k zero bytes into a zero
// register; slicing-by-8 uses all eight to consume a 64-bit word per step.
using SliceTable = std::array<std::array<uint32_t, 256>, 8>;
constexpr SliceTable MakeSliceTable() {
  SliceTable t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ kPoly : crc >> 1;
    t[0][b] = crc;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = t[0][b];
    for (int k = 1; k < 8; ++k) {
      crc = t[0][crc & 0xff] ^ (crc >> 8);
      t[k][b] = crc;
    }
  }
  return t;
}
constexpr SliceTable kSliceTable = MakeSliceTable();

inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

}  // namespace

namespace crc32c_internal {

uint32_t ExtendPortable(uint32_t crc, absl::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  const auto& t = kSliceTable;
  uint64_t c = crc ^ 0xffffffffu;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    --n;
  }
  for (; n >= 8; n -= 8, p += 8) {
    const uint64_t w = Load64(p) ^ c;
    c = t[7][w & 0xff] ^ t[6][(w >> 8) & 0xff] ^ t[5][(w >> 16) & 0xff] ^ t[4][(w >> 24) & 0xff] ^
        t[3][(w >> 32) & 0xff] ^ t[2][(w >> 40) & 0xff] ^ t[1][(w >> 48) & 0xff] ^ t[0][w >> 56];
  }
  while (n-- > 0) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return static_cast<uint32_t>(c) ^ 0xffffffffu;
}

}  // namespace crc32c_internal

namespace {

// --- Combining three interleaved streams (after Mark Adler's crc32c.c). ---
// The crc32 instruction has a latency of 3 cycles and a throughput of 1 per cycle, so three
// independent streams over adjacent blocks run ~3x faster than one. The blocks' CRCs are then
// merged: CRC(A+B) = Shift_|B|(CRC(A)) ^ CRC(B) when B's CRC starts from a zero register, where
// Shift_n (feeding n zero bytes) is a linear map on the 32-bit register, applied with 4 tables.

using Matrix = std::array<uint32_t, 32>;  // GF(2) 32x32 matrix, one column per word.

constexpr uint32_t MatrixTimes(const Matrix& m, uint32_t v) {
  uint32_t sum = 0;
  for (int i = 0; v != 0; ++i, v >>= 1) {
    if (v & 1) sum ^= m[i];
  }
  return sum;
}

constexpr Matrix MatrixSquare(const Matrix& m) {
  Matrix sq{};
  for (int i = 0; i < 32; ++i) sq[i] = MatrixTimes(m, m[i]);
  return sq;
}

using ShiftTable = std::array<std::array<uint32_t, 256>, 4>;

// Tables applying the operator "feed `bytes` zero bytes" (bytes a power of two).
constexpr ShiftTable MakeShiftTable(size_t bytes) {
  Matrix op{};  // One zero bit.
  op[0] = kPoly;
  for (int i = 1; i < 32; ++i) op[i] = 1u << (i - 1);
  // Squaring doubles the number of zero bits: 8 * bytes = 2^(3 + log2(bytes)).
  for (size_t bits = 1; bits < 8 * bytes; bits <<= 1) op = MatrixSquare(op);
  ShiftTable t{};
  for (uint32_t b = 0; b < 256; ++b) {
    for (int k = 0; k < 4; ++k) t[k][b] = MatrixTimes(op, b << (8 * k));
  }
  return t;
}

[[maybe_unused]] inline uint64_t Shift(const ShiftTable& t, uint64_t crc) {
  return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^
         t[3][(crc >> 24) & 0xff];
}

// Block sizes of the three-way loop: long blocks amortise the merge, short ones cover the tail.
constexpr size_t kLongBlock = 8192;
constexpr size_t kShortBlock = 256;
[[maybe_unused]] constexpr ShiftTable kLongShift = MakeShiftTable(kLongBlock);
[[maybe_unused]] constexpr ShiftTable kShortShift = MakeShiftTable(kShortBlock);

#if SLUICE_CRC32C_X86

// The last n < 8 bytes: at most three instructions instead of up to seven byte steps.
__attribute__((target("sse4.2"), always_inline)) inline uint64_t Sse42Tail(uint64_t c,
                                                                           const unsigned char* p,
                                                                           size_t n) {
  uint32_t c32 = static_cast<uint32_t>(c);
  if (n & 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
    c32 = _mm_crc32_u32(c32, v);
    p += 4;
  }
  if (n & 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap16(v);
    c32 = _mm_crc32_u16(c32, v);
    p += 2;
  }
  if (n & 1) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}

// Runs three crc32q streams over blocks of `block` bytes while at least 3 blocks remain.
__attribute__((target("sse4.2"), always_inline)) inline uint64_t ThreeWay(uint64_t c0,
                                                                          const unsigned char*& p,
                                                                          size_t& n, size_t block,
                                                                          const ShiftTable& shift) {
  while (n >= 3 * block) {
    uint64_t c1 = 0, c2 = 0;
    const unsigned char* end = p + block;
    do {
      c0 = _mm_crc32_u64(c0, Load64(p));
      c1 = _mm_crc32_u64(c1, Load64(p + block));
      c2 = _mm_crc32_u64(c2, Load64(p + 2 * block));
      p += 8;
    } while (p < end);
    c0 = Shift(shift, c0) ^ c1;
    c0 = Shift(shift, c0) ^ c2;
    p += 2 * block;
    n -= 3 * block;
  }
  return c0;
}

__attribute__((target("sse4.2"))) uint32_t Sse42Extend(uint32_t crc, const unsigned char* p,
                                                       size_t n) {
  uint64_t c = crc ^ 0xffffffffu;
  if (n >= 3 * kShortBlock) {
    // Aligned loads for the long loops; short inputs load unaligned (no penalty on x86).
    while ((reinterpret_cast<uintptr_t>(p) & 7) != 0) {
      c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
      --n;
    }
    c = ThreeWay(c, p, n, kLongBlock, kLongShift);
    c = ThreeWay(c, p, n, kShortBlock, kShortShift);
  }
  for (; n >= 8; n -= 8, p += 8) c = _mm_crc32_u64(c, Load64(p));
  c = Sse42Tail(c, p, n);
  return static_cast<uint32_t>(c) ^ 0xffffffffu;
}

#endif  // SLUICE_CRC32C_X86

// --- Folding with carry-less multiplication (AVX-512 VPCLMULQDQ). ---
// A 128-bit lane holding message bits of degrees 127..0 (the lane's first bit is the highest)
// moves D bits further along the message when multiplied by x^D; only its value mod P matters.
// Its low qword (degrees 127..64) is multiplied by x^(D+63) mod P and its high qword by
// x^(D-1) mod P: the extra x^63 / x^-1 account for the qword's own position and for the one-bit
// shift of a bit-reflected carry-less product. Constants are bit-reflected into the high half of
// a qword (bit b <-> x^(63-b)). The final 128 bits are reduced with two crc32 instructions.

constexpr uint64_t kPolyNormal = 0x11EDC6F41ull;  // CRC-32C with its x^32 term, not reflected.

constexpr uint64_t XPowModP(int n) {
  uint64_t r = 1;
  for (int i = 0; i < n; ++i) {
    r <<= 1;
    if (r >> 32) r ^= kPolyNormal;
  }
  return r;
}

constexpr uint64_t ReflectedConstant(int n) {
  const uint64_t v = XPowModP(n);
  uint64_t r = 0;
  for (int i = 0; i < 32; ++i) {
    if ((v >> i) & 1) r |= uint64_t{1} << (63 - i);
  }
  return r;
}

// {low qword constant, high qword constant} folding a lane forward by `bits`.
constexpr uint64_t FoldLo(int bits) { return ReflectedConstant(bits + 63); }
constexpr uint64_t FoldHi(int bits) { return ReflectedConstant(bits - 1); }
// Computed at compile time: by 256 bytes (the main loop), 64 bytes and 16 bytes.
constexpr int64_t kFold2048Lo = static_cast<int64_t>(FoldLo(2048));
constexpr int64_t kFold2048Hi = static_cast<int64_t>(FoldHi(2048));
constexpr int64_t kFold512Lo = static_cast<int64_t>(FoldLo(512));
constexpr int64_t kFold512Hi = static_cast<int64_t>(FoldHi(512));
constexpr int64_t kFold128Lo = static_cast<int64_t>(FoldLo(128));
constexpr int64_t kFold128Hi = static_cast<int64_t>(FoldHi(128));

#if SLUICE_CRC32C_X86

__attribute__((target("sse4.2,pclmul"))) inline __m128i Fold128(__m128i x, __m128i k,
                                                                __m128i data) {
  return _mm_xor_si128(
      _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), data);
}

__attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2"))) inline __m512i Fold512(__m512i x,
                                                                                   __m512i k,
                                                                                   __m512i data) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                   _mm512_clmulepi64_epi128(x, k, 0x11), data, 0x96);  // a^b^c
}

// The zero-masked extract: the plain one trips GCC 12's -Wmaybe-uninitialized inside its header.
template <int kLane>
__attribute__((target("avx512f"))) inline __m128i Lane(__m512i z) {
  return _mm512_maskz_extracti32x4_epi32(0xf, z, kLane);
}

__attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2"))) uint32_t Avx512ClmulExtend(
    uint32_t crc, const unsigned char* p, size_t n) {
  if (n < 512) return Sse42Extend(crc, p, n);  // Folding's fixed cost does not pay off.
  // Four 64-byte accumulators (16 lanes) cover 256 bytes; the CRC so far enters as the message's
  // first 32 bits.
  __m512i z0 = _mm512_loadu_si512(p);
  __m512i z1 = _mm512_loadu_si512(p + 64);
  __m512i z2 = _mm512_loadu_si512(p + 128);
  __m512i z3 = _mm512_loadu_si512(p + 192);
  z0 = _mm512_xor_si512(z0, _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(~crc))));
  p += 256;
  n -= 256;
  const __m512i k2048 = _mm512_set_epi64(kFold2048Hi, kFold2048Lo, kFold2048Hi, kFold2048Lo,
                                         kFold2048Hi, kFold2048Lo, kFold2048Hi, kFold2048Lo);
  for (; n >= 256; p += 256, n -= 256) {
    z0 = Fold512(z0, k2048, _mm512_loadu_si512(p));
    z1 = Fold512(z1, k2048, _mm512_loadu_si512(p + 64));
    z2 = Fold512(z2, k2048, _mm512_loadu_si512(p + 128));
    z3 = Fold512(z3, k2048, _mm512_loadu_si512(p + 192));
  }
  const __m512i k512 = _mm512_set_epi64(kFold512Hi, kFold512Lo, kFold512Hi, kFold512Lo, kFold512Hi,
                                        kFold512Lo, kFold512Hi, kFold512Lo);
  z1 = Fold512(z0, k512, z1);
  z2 = Fold512(z1, k512, z2);
  z3 = Fold512(z2, k512, z3);
  const __m128i k128 = _mm_set_epi64x(kFold128Hi, kFold128Lo);
  __m128i x = Lane<0>(z3);
  x = Fold128(x, k128, Lane<1>(z3));
  x = Fold128(x, k128, Lane<2>(z3));
  x = Fold128(x, k128, Lane<3>(z3));
  for (; n >= 16; p += 16, n -= 16) {
    x = Fold128(x, k128, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // What is left is the CRC of x's 16 bytes and the tail, from a zero register.
  uint64_t c = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(x)));
  c = _mm_crc32_u64(c, static_cast<uint64_t>(_mm_extract_epi64(x, 1)));
  for (; n >= 8; n -= 8, p += 8) c = _mm_crc32_u64(c, Load64(p));
  return ~static_cast<uint32_t>(Sse42Tail(c, p, n));
}

#endif  // SLUICE_CRC32C_X86

enum class Impl { kPortable, kSse42, kAvx512Clmul };

Impl DetectImpl() {
#if SLUICE_CRC32C_X86
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("sse4.2")) return Impl::kPortable;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq") &&
      __builtin_cpu_supports("pclmul")) {
    return Impl::kAvx512Clmul;
  }
  return Impl::kSse42;
#else
  return Impl::kPortable;
#endif
}

Impl BestImpl() {
  static const Impl impl = DetectImpl();
  return impl;
}

const unsigned char* Bytes(absl::string_view data) {
  return reinterpret_cast<const unsigned char*>(data.data());
}

}  // namespace

namespace crc32c_internal {

bool HasSse42() { return BestImpl() != Impl::kPortable; }
bool HasAvx512Clmul() { return BestImpl() == Impl::kAvx512Clmul; }

uint32_t ExtendSse42(uint32_t crc, absl::string_view data) {
#if SLUICE_CRC32C_X86
  return Sse42Extend(crc, Bytes(data), data.size());
#else
  return ExtendPortable(crc, data);
#endif
}

uint32_t ExtendAvx512Clmul(uint32_t crc, absl::string_view data) {
#if SLUICE_CRC32C_X86
  return Avx512ClmulExtend(crc, Bytes(data), data.size());
#else
  return ExtendPortable(crc, data);
#endif
}

}  // namespace crc32c_internal

uint32_t Crc32cExtend(uint32_t crc, absl::string_view d) {
#if SLUICE_CRC32C_X86
  switch (BestImpl()) {
    case Impl::kAvx512Clmul:
      return Avx512ClmulExtend(crc, Bytes(d), d.size());
    case Impl::kSse42:
      return Sse42Extend(crc, Bytes(d), d.size());
    case Impl::kPortable:
      break;
  }
#endif
  return crc32c_internal::ExtendPortable(crc, d);
}

uint32_t Crc32c(absl::string_view data) { return Crc32cExtend(0, data); }

}  // namespace sluice
