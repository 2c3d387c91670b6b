#include "ops/cast.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/float16.h"
#include "gtest/gtest.h"
#include "tests/tensor_values.h"

namespace sluice {
namespace {

using ::sluice::testing::Values;

TEST(CastTest, FloatToIntegerTruncatesAndSaturates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor f = Tensor::FromVector<float>(
      {3.9f, -3.9f, 0.5f, -0.5f, 300.7f, -1.5f, 3e9f, -3e9f, nan, inf, -inf, 1e19f});
  auto u8 = Cast(f, DType::kUint8);
  ASSERT_TRUE(u8.ok());
  EXPECT_EQ(Values<uint8_t>(*u8),
            (std::vector<uint8_t>{3, 0, 0, 0, 255, 0, 255, 0, 0, 255, 0, 255}));
  auto i32 = Cast(f, DType::kInt32);
  ASSERT_TRUE(i32.ok());
  const int32_t max32 = std::numeric_limits<int32_t>::max(),
                min32 = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(Values<int32_t>(*i32),
            (std::vector<int32_t>{3, -3, 0, 0, 300, -1, max32, min32, 0, max32, min32, max32}));
  auto i64 = Cast(f, DType::kInt64);
  ASSERT_TRUE(i64.ok());
  const int64_t max64 = std::numeric_limits<int64_t>::max(),
                min64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(Values<int64_t>(*i64), (std::vector<int64_t>{3, -3, 0, 0, 300, -1, 3000000000,
                                                         -3000000000, 0, max64, min64, max64}));
}

TEST(CastTest, IntegerToNarrowerIntegerSaturates) {
  const Tensor i64 = Tensor::FromVector<int64_t>({-5, 0, 255, 256, 1ll << 40, -(1ll << 40)});
  auto u8 = Cast(i64, DType::kUint8);
  auto i32 = Cast(i64, DType::kInt32);
  ASSERT_TRUE(u8.ok() && i32.ok());
  EXPECT_EQ(Values<uint8_t>(*u8), (std::vector<uint8_t>{0, 0, 255, 255, 255, 0}));
  EXPECT_EQ(Values<int32_t>(*i32),
            (std::vector<int32_t>{-5, 0, 255, 256, std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min()}));
  auto back = Cast(*u8, DType::kInt64);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(Values<int64_t>(*back), (std::vector<int64_t>{0, 0, 255, 255, 255, 0}));
}

TEST(CastTest, ToAndFromHalfPrecision) {
  const Tensor f = Tensor::FromVector<float>({1.0f, -2.5f, 65504.0f, 65520.0f, 1.0f / 3.0f});
  auto f16 = Cast(f, DType::kFloat16);
  ASSERT_TRUE(f16.ok());
  std::vector<uint16_t> bits;
  for (Float16 h : f16->flat<Float16>()) bits.push_back(h.bits);
  // 1 = 0x3C00, -2.5 = 0xC100, 65504 = 0x7BFF (largest), 65520 rounds to infinity (0x7C00),
  // 1/3 = 0x3555.
  EXPECT_EQ(bits, (std::vector<uint16_t>{0x3C00, 0xC100, 0x7BFF, 0x7C00, 0x3555}));
  auto bf16 = Cast(f, DType::kBFloat16);
  ASSERT_TRUE(bf16.ok());
  // bfloat16 1/3: float 0x3EAAAAAB -> 0x3EAB.
  EXPECT_EQ(bf16->flat<BFloat16>()[4].bits, 0x3EAB);
  EXPECT_EQ(bf16->flat<BFloat16>()[2].bits, 0x4780);  // 65504 rounds to 65536.
  // Widening back is exact.
  auto back = Cast(*f16, DType::kFloat32);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->flat<float>()[1], -2.5f);
  EXPECT_TRUE(std::isinf(back->flat<float>()[3]));
  // float16 -> bfloat16 -> int32.
  auto b = Cast(*f16, DType::kBFloat16);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->flat<BFloat16>()[1].bits, 0xC020);  // -2.5
  auto ints = Cast(*b, DType::kInt32);
  ASSERT_TRUE(ints.ok());
  EXPECT_EQ(Values<int32_t>(*ints)[1], -2);
  EXPECT_EQ(Values<int32_t>(*ints)[2], 65536);  // 65504 is 65536 in bfloat16.
}

TEST(CastTest, IntegerToFloatRoundsToNearest) {
  const Tensor i = Tensor::FromVector<int64_t>({7, -7, (1 << 24) + 1, (1 << 24) + 3});
  auto f = Cast(i, DType::kFloat32);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(Values<float>(*f), (std::vector<float>{7, -7, 16777216.0f, 16777220.0f}));
  const Tensor u8 = Tensor::FromVector<uint8_t>({0, 128, 255});
  auto h = Cast(u8, DType::kFloat16);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->flat<Float16>()[2].bits, 0x5BF8);  // 255 = 1.9921875 * 2^7.
}

TEST(CastTest, KeepsShapeAndSameDtypeSharesTheBuffer) {
  auto t = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  ASSERT_TRUE(t.ok());
  auto f = Cast(*t, DType::kFloat32);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->shape(), (Shape{2, 3}));
  auto same = Cast(*t, DType::kInt32);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->SharesBufferWith(*t));
}

TEST(CastTest, BytesAreRejected) {
  Tensor bytes(DType::kBytes, Shape{1});
  EXPECT_EQ(Cast(bytes, DType::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Cast(Tensor::FromVector<float>({1}), DType::kBytes).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
