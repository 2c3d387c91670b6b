#include "train/backend/cpu/bfloat16_convert.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace sluice::train::backend::cpu {
namespace {

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

struct Case {
  uint32_t in;
  uint16_t want;
};

// Worked by hand from VCVTNEPS2BF16's definition (Intel SDM).
constexpr Case kCases[] = {
    {0x3f800000u, 0x3f80u},  // 1.0
    {0x3f808000u, 0x3f80u},  // half-way, kept bit even: down
    {0x3f818000u, 0x3f82u},  // half-way, kept bit odd: up to even
    {0x3f808001u, 0x3f81u},  // just above half-way: up
    {0x3f80ffffu, 0x3f81u},  // just below the next half-way: up
    {0xc0200000u, 0xc020u},  // -2.5
    {0x7f7fffffu, 0x7f80u},  // the largest float rounds to +inf
    {0x7f800000u, 0x7f80u},  // +inf
    {0xff800000u, 0xff80u},  // -inf
    {0x7f800001u, 0x7fc0u},  // a signalling NaN whose payload lies below bit 16: quieted
    {0xffc12345u, 0xffc1u},  // a quiet NaN: truncated
    {0x00000001u, 0x0000u},  // the smallest denormal: flushed
    {0x80400000u, 0x8000u},  // a negative denormal: flushed to -0
    {0x00800000u, 0x0080u},  // the smallest normal
    {0x00000000u, 0x0000u},  // +0
    {0x80000000u, 0x8000u},  // -0
};

TEST(BFloat16ConvertTest, RoundsToNearestEvenFlushesDenormalsAndQuietsNaNs) {
  for (const Case& c : kCases) {
    EXPECT_EQ(internal::FloatToBFloat16Portable(FromBits(c.in)), c.want) << std::hex << c.in;
  }
  std::vector<float> in;
  for (const Case& c : kCases) in.push_back(FromBits(c.in));
  std::vector<uint16_t> out(in.size());
  FloatToBFloat16(in.data(), out.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(out[i], kCases[i].want) << std::hex << kCases[i].in;
}

// Random bit patterns of every class, over a length that spans several parallel chunks and ends
// in a partial vector: the AVX512-BF16 loop (where the CPU has it) gives the portable bits.
TEST(BFloat16ConvertTest, ArraysConvertAsTheElementwiseDefinition) {
  std::mt19937_64 rng(7);
  constexpr int64_t kN = 100003;
  std::vector<float> in(kN);
  for (int64_t i = 0; i < kN; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    if (i % 7 == 0) u &= 0x807fffffu;   // denormals
    if (i % 11 == 0) u |= 0x7f800000u;  // infinities and NaNs
    in[i] = FromBits(u);
  }
  std::vector<uint16_t> out(kN);
  FloatToBFloat16(in.data(), out.data(), kN);
  for (int64_t i = 0; i < kN; ++i) {
    ASSERT_EQ(out[i], internal::FloatToBFloat16Portable(in[i])) << "element " << i;
  }
}

// Every bfloat16 widens exactly: converting back gives the same bits, except that denormals
// flush to zero and signalling NaNs come back quiet.
TEST(BFloat16ConvertTest, EveryBFloat16RoundTripsThroughFloat) {
  std::vector<uint16_t> all(65536), back(65536);
  for (uint32_t b = 0; b < 65536; ++b) all[b] = static_cast<uint16_t>(b);
  std::vector<float> wide(65536);
  BFloat16ToFloat(all.data(), wide.data(), 65536);
  FloatToBFloat16(wide.data(), back.data(), 65536);
  for (uint32_t b = 0; b < 65536; ++b) {
    uint32_t w;
    std::memcpy(&w, &wide[b], sizeof w);
    ASSERT_EQ(w, b << 16);
    const bool denormal = (b & 0x7f80u) == 0 && (b & 0x7fu) != 0;
    const bool nan = (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
    const uint16_t want = denormal ? static_cast<uint16_t>(b & 0x8000u)
                          : nan    ? static_cast<uint16_t>(b | 0x40u)
                                   : static_cast<uint16_t>(b);
    ASSERT_EQ(back[b], want) << std::hex << b;
  }
}

// Any length, the vector loops' tails included: n elements widened, and not one more written.
TEST(BFloat16ConvertTest, RunsOfAnyLengthConvertExactlyTheirElements) {
  for (int64_t n = 0; n <= 40; ++n) {
    SCOPED_TRACE(n);
    std::vector<uint16_t> in(n + 1);
    for (int64_t i = 0; i <= n; ++i) in[i] = static_cast<uint16_t>(0x3f80 + 3 * i);
    std::vector<float> wide(n + 1, -7.0f);
    BFloat16ToFloatRun(in.data(), wide.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      uint32_t w;
      std::memcpy(&w, &wide[i], sizeof w);
      ASSERT_EQ(w, static_cast<uint32_t>(in[i]) << 16) << i;
    }
    EXPECT_EQ(wide[n], -7.0f);
    std::vector<uint16_t> back(n + 1, 0xabcd);
    FloatToBFloat16Run(wide.data(), back.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(back[i], in[i]) << i;
    EXPECT_EQ(back[n], 0xabcd);
  }
}

}  // namespace
}  // namespace sluice::train::backend::cpu
