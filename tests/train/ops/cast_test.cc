#include "train/ops/cast.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tests/train/gradient_check.h"
#include "tests/train/skip_without_bfloat16.h"
#include "train/autodiff/tape.h"
#include "train/backend/compute_precision.h"
#include "train/ops/arithmetic.h"

namespace sluice::train::ops {
namespace {

using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

template <typename V>
std::vector<V> Ints(const Tensor& t) {
  return std::vector<V>(t.data<V>(), t.data<V>() + t.num_elements());
}

TEST(CastTest, FloatToIntTruncatesAndSaturates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = T({1.7f, -1.7f, 0.5f, nan, 3e9f, -3e9f}, {2, 3});
  Tensor y = *Cast(x, DType::kInt32);
  EXPECT_EQ(y.dtype(), DType::kInt32);
  EXPECT_EQ(y.shape(), Shape({2, 3}));
  EXPECT_THAT(Ints<int32_t>(y), ElementsAre(1, -1, 0, 0, std::numeric_limits<int32_t>::max(),
                                            std::numeric_limits<int32_t>::min()));
  Tensor z = *Cast(T({2.9f, -1e20f, 1e20f}, {3}), DType::kInt64);
  EXPECT_THAT(Ints<int64_t>(z), ElementsAre(2, std::numeric_limits<int64_t>::min(),
                                            std::numeric_limits<int64_t>::max()));
}

TEST(CastTest, IntegersToFloatAndBetweenWidths) {
  // 2^24 + 1 is the first integer float32 cannot hold: it rounds to 2^24.
  Tensor f = *Cast(Tensor::FromVector<int32_t>({1, -2, 16777217}), DType::kFloat32);
  EXPECT_THAT(Values(f), ElementsAre(1, -2, 16777216));
  // 2^32 + 1 keeps its low 32 bits, 1.
  Tensor narrow = *Cast(Tensor::FromVector<int64_t>({4294967297LL, -3}), DType::kInt32);
  EXPECT_THAT(Ints<int32_t>(narrow), ElementsAre(1, -3));
  Tensor wide = *Cast(Tensor::FromVector<int32_t>({-7, 9}), DType::kInt64);
  EXPECT_THAT(Ints<int64_t>(wide), ElementsAre(-7, 9));
}

TEST(CastTest, GradientFlowsFloatToFloatOnly) {
  Tensor x = T({1.5f, -2}, {2});
  autodiff::Tape tape;
  tape.Watch(x);
  Tensor same = *Cast(x, DType::kFloat32);
  EXPECT_TRUE(tape.IsTracked(same));
  auto g = *tape.Gradient(same, {x});
  EXPECT_THAT(Values(*g[0]), ElementsAre(1, 1));
  autodiff::Tape tape2;
  tape2.Watch(x);
  EXPECT_FALSE(tape2.IsTracked(*Cast(x, DType::kInt32)));
}

TEST(CastTest, BFloat16RoundsToNearestEvenAndItsGradientCastsBack) {
  const Tensor x = T({1.00390625f, 1.01171875f, -3, 0.1f}, {4});
  // Outside the mixed policy the CPU makes no bfloat16.
  EXPECT_EQ(Cast(x, DType::kBFloat16).status().code(), absl::StatusCode::kInvalidArgument);
  SLUICE_SKIP_WITHOUT_CPU_BFLOAT16();
  backend::ScopedPrecision policy(backend::Precision::kMixedBFloat16);
  autodiff::Tape tape;
  tape.Watch(x);
  absl::StatusOr<Tensor> half = Cast(x, DType::kBFloat16);
  ASSERT_TRUE(half.ok()) << half.status();
  ASSERT_EQ(half->dtype(), DType::kBFloat16);
  // 1 + 2^-8 is a tie: to even, 1; 1 + 3 * 2^-8 is one too: to even, 1 + 2^-6; 0.1 to
  // 0.10009765625.
  absl::StatusOr<Tensor> back = Cast(*half, DType::kFloat32);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(Values(*back), ElementsAre(1, 1.015625f, -3, 0.10009765625f));
  absl::StatusOr<std::vector<std::optional<Tensor>>> g =
      tape.Gradient(*Mul(*back, T({1, 2, 3, 0.5f}, {4})), {x});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)[0]->dtype(), DType::kFloat32);
  EXPECT_THAT(Values(*(*g)[0]), ElementsAre(1, 2, 3, 0.5f));
  // Integers do not cast to or from bfloat16.
  EXPECT_EQ(Cast(*half, DType::kInt32).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CastTest, OtherDtypesAreErrors) {
  Tensor bytes = Tensor::FromVector<uint8_t>({1, 2});
  EXPECT_EQ(Cast(bytes, DType::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Cast(T({1}, {1}), DType::kFloat16).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::train::ops
