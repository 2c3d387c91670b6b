#ifndef SLUICE_CORE_FLOAT16_H_
#define SLUICE_CORE_FLOAT16_H_

#include <bit>
#include <cstdint>

namespace sluice {

// IEEE 754 binary16, stored as its bit pattern. Conversions round to nearest
// even, and keep infinities and NaNs.
struct Float16 {
  uint16_t bits = 0;

  Float16() = default;
  explicit Float16(float f) : bits(FromFloat(f)) {}
  explicit operator float() const { return ToFloat(bits); }
  static Float16 FromBits(uint16_t b) {
    Float16 h;
    h.bits = b;
    return h;
  }
  friend bool operator==(Float16 a, Float16 b) { return a.bits == b.bits; }

  static uint16_t FromFloat(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // Inf or NaN (keep NaN quiet and non-zero).
      return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // Overflow.
    if (abs < 0x38800000u) {  // Subnormal or zero in half precision.
      if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // Rounds to 0.
      return RoundSubnormal(sign, abs);
    }
    // Normal: rebias exponent (127 -> 15), round mantissa 23 -> 10 bits.
    uint32_t h = ((abs - 0x38000000u) >> 13);
    const uint32_t rem = abs & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }

  static float ToFloat(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
      // Zero or subnormal: mant * 2^-24.
      const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
      return sign ? -v : v;
    }
    if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
    return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  }

 private:
  static uint16_t RoundSubnormal(uint32_t sign, uint32_t abs) {
    // abs encodes a float below 2^-14. Half subnormals are multiples of 2^-24,
    // so compute round-to-nearest-even of value * 2^24 exactly in integers.
    const uint32_t exp = abs >> 23;                       // 102..112 here.
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;  // value = mant*2^(exp-150)
    const uint32_t rshift = 126 - exp;                    // value*2^24 = mant >> (126-exp)
    uint32_t q = mant >> rshift;
    const uint32_t rem = mant & ((1u << rshift) - 1);
    const uint32_t half = 1u << (rshift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
};

// bfloat16: the top half of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  explicit BFloat16(float f) : bits(FromFloat(f)) {}
  explicit operator float() const { return ToFloat(bits); }
  static BFloat16 FromBits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  friend bool operator==(BFloat16 a, BFloat16 b) { return a.bits == b.bits; }

  static uint16_t FromFloat(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
  static float ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
};

}  // namespace sluice

#endif  // SLUICE_CORE_FLOAT16_H_
