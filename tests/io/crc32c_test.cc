#include "io/crc32c.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace {

using crc32c_internal::ExtendAvx512Clmul;
using crc32c_internal::ExtendPortable;
using crc32c_internal::ExtendSse42;
using crc32c_internal::HasAvx512Clmul;
using crc32c_internal::HasSse42;

// Bit-at-a-time CRC-32C: slow, obviously right, and shares no code with the implementations.
uint32_t ReferenceCrc32c(absl::string_view data) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
  }
  return crc ^ 0xffffffffu;
}

std::string RandomBytes(size_t n, std::mt19937_64& rng) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(Crc32cTest, KnownVectors) {
  // The check value of the CRC-32C catalogue entry and the test vectors of RFC 3720, B.4.
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending(32, '\0'), descending(32, '\0');
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<char>(i);
    descending[i] = static_cast<char>(31 - i);
  }
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(descending), 0x113FDB5Cu);
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST(Crc32cTest, PortableMatchesKnownVectorsAndReference) {
  EXPECT_EQ(ExtendPortable(0, "123456789"), 0xE3069283u);
  EXPECT_EQ(ExtendPortable(0, std::string(32, '\0')), 0x8A9136AAu);
  std::mt19937_64 rng(1);
  for (size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 1000, 4099}) {
    const std::string data = RandomBytes(n + 8, rng);
    for (size_t align = 0; align < 8; ++align) {
      const absl::string_view piece(data.data() + align, n);
      EXPECT_EQ(ExtendPortable(0, piece), ReferenceCrc32c(piece)) << n << " " << align;
    }
  }
}

using ExtendFn = uint32_t (*)(uint32_t, absl::string_view);

// Checks an accelerated implementation against the portable one.
void ExpectMatchesPortable(ExtendFn extend) {
  EXPECT_EQ(extend(0, "123456789"), 0xE3069283u);
  std::mt19937_64 rng(42);
  const std::string data = RandomBytes(200'000, rng);
  // Every length and alignment through the 8- and 16-byte loops, the first 3 x 256 blocks and
  // the first few 256-byte folds.
  for (size_t n = 0; n <= 1600; ++n) {
    for (size_t align = 0; align < 8; ++align) {
      const absl::string_view piece(data.data() + align, n);
      ASSERT_EQ(extend(0, piece), ExtendPortable(0, piece))
          << "length " << n << " alignment " << align;
    }
  }
  // Around the long-block threshold (3 x 8192) and its multiples.
  for (size_t base : {3 * 8192, 6 * 8192, 9 * 8192}) {
    for (size_t n = base - 20; n <= base + 20; ++n) {
      const absl::string_view piece(data.data() + (n % 13), n);
      ASSERT_EQ(extend(0, piece), ExtendPortable(0, piece)) << n;
    }
  }
  // Random lengths, alignments and starting CRCs.
  std::uniform_int_distribution<size_t> length(0, 150'000);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = length(rng);
    const size_t start = rng() % (data.size() - n + 1);
    const uint32_t seed = static_cast<uint32_t>(rng());
    const absl::string_view piece(data.data() + start, n);
    ASSERT_EQ(extend(seed, piece), ExtendPortable(seed, piece))
        << "length " << n << " start " << start;
  }
  const absl::string_view odd(data.data() + 3, 70'001);
  EXPECT_EQ(extend(0, odd), ReferenceCrc32c(odd));
}

TEST(Crc32cTest, Sse42MatchesPortableOnRandomLengthsAndAlignments) {
  if (!HasSse42()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  ExpectMatchesPortable(&ExtendSse42);
}

TEST(Crc32cTest, Avx512ClmulMatchesPortableOnRandomLengthsAndAlignments) {
  if (!HasAvx512Clmul()) GTEST_SKIP() << "no AVX-512 VPCLMULQDQ on this CPU";
  ExpectMatchesPortable(&ExtendAvx512Clmul);
}

TEST(Crc32cTest, DispatchedCrcMatchesPortable) {
  std::mt19937_64 rng(11);
  for (size_t n : {0, 5, 100, 511, 512, 4096, 65536, 1000003}) {
    const std::string data = RandomBytes(n, rng);
    EXPECT_EQ(Crc32c(data), ExtendPortable(0, data)) << n;
  }
}

TEST(Crc32cTest, ExtendEqualsCrcOfConcatenation) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::string data = RandomBytes(rng() % 100'000, rng);
    const size_t split = data.empty() ? 0 : rng() % data.size();
    const absl::string_view a(data.data(), split), b(data.data() + split, data.size() - split);
    ASSERT_EQ(Crc32cExtend(Crc32c(a), b), Crc32c(data));
    ASSERT_EQ(ExtendPortable(ExtendPortable(0, a), b), Crc32c(data));
  }
}

TEST(Crc32cTest, MaskIsTheTFRecordRotationAndUnmaskInvertsIt) {
  EXPECT_EQ(MaskCrc32c(0), 0xa282ead8u);
  // Rotate right by 15, then add the constant (mod 2^32).
  EXPECT_EQ(MaskCrc32c(0x00008000u), 0x00000001u + 0xa282ead8u);
  EXPECT_EQ(MaskCrc32c(0x00000001u), 0x00020000u + 0xa282ead8u);
  EXPECT_EQ(MaskCrc32c(0xffffffffu), 0xffffffffu + 0xa282ead8u);
  std::mt19937 rng(3);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t crc = rng();
    EXPECT_EQ(UnmaskCrc32c(MaskCrc32c(crc)), crc);
    EXPECT_NE(MaskCrc32c(crc), crc);
  }
}

}  // namespace
}  // namespace sluice
