#include "core/float16.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace sluice {
namespace {

// Reference: exhaustively decode every half, then check encode picks the
// nearest representable half (ties to even) for values around each one.
TEST(Float16Test, EveryHalfRoundTrips) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const uint16_t bits = static_cast<uint16_t>(b);
    const float f = Float16::ToFloat(bits);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Float16::ToFloat(Float16::FromFloat(f))));
      continue;
    }
    EXPECT_EQ(Float16::FromFloat(f), bits) << std::hex << b;
  }
}

TEST(Float16Test, KnownValues) {
  EXPECT_EQ(Float16::FromFloat(1.0f), 0x3c00);
  EXPECT_EQ(Float16::FromFloat(-2.0f), 0xc000);
  EXPECT_EQ(Float16::FromFloat(65504.0f), 0x7bff);  // Largest finite.
  EXPECT_EQ(Float16::FromFloat(65520.0f), 0x7c00);  // Rounds to infinity.
  EXPECT_EQ(Float16::FromFloat(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(Float16::FromFloat(5.9604644775390625e-8f), 0x0001);   // Smallest subnormal.
  EXPECT_EQ(Float16::FromFloat(2.98023223876953125e-8f), 0x0000);  // Half of it: tie to even.
  EXPECT_EQ(Float16::FromFloat(3.0e-8f), 0x0001);
  EXPECT_EQ(Float16::FromFloat(1.0f + 1.0f / 2048), 0x3c00);  // Tie, rounds to even.
  EXPECT_EQ(Float16::FromFloat(1.0f + 3.0f / 2048), 0x3c02);  // Tie, rounds to even (up).
  EXPECT_FLOAT_EQ(static_cast<float>(Float16(0.333333f)), 0.33325195f);
}

TEST(Float16Test, MidpointsRoundToNearestEven) {
  // For consecutive finite positive halves a < b, the float midpoint goes to
  // whichever has an even mantissa, and just above/below go to the nearer.
  for (uint16_t a = 0; a < 0x7bff; ++a) {
    const float fa = Float16::ToFloat(a), fb = Float16::ToFloat(a + 1);
    const float mid = fa + (fb - fa) / 2;
    EXPECT_EQ(Float16::FromFloat(mid), (a & 1) ? a + 1 : a) << std::hex << a;
    EXPECT_EQ(Float16::FromFloat(std::nextafter(mid, 0.f)), a) << std::hex << a;
    EXPECT_EQ(Float16::FromFloat(std::nextafter(mid, 1e9f)), a + 1) << std::hex << a;
  }
}

TEST(BFloat16Test, RoundsToNearestEvenAndKeepsNaN) {
  EXPECT_EQ(BFloat16::FromFloat(1.0f), 0x3f80);
  EXPECT_EQ(BFloat16::FromFloat(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // Tie -> even.
  EXPECT_EQ(BFloat16::FromFloat(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // Tie -> even.
  EXPECT_EQ(BFloat16::FromFloat(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_TRUE(std::isnan(BFloat16::ToFloat(BFloat16::FromFloat(std::nanf("")))));
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = BFloat16::ToFloat(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      EXPECT_EQ(BFloat16::FromFloat(f), b);
    }
  }
}

}  // namespace
}  // namespace sluice
