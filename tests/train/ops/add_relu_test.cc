#include "train/ops/add_relu.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/float16.h"
#include "tests/train/gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/backend/compute_precision.h"
#include "train/ops/activations.h"
#include "train/ops/arithmetic.h"
#include "train/ops/cast.h"
#include "train/ops/reduce.h"

namespace sluice::train::ops {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

// The value and the gradients of sum(w * f(a, b)).
struct Differentiated {
  Tensor out, grad_a, grad_b;
};
template <typename Fn>
Differentiated Differentiate(Fn f, const Tensor& a, const Tensor& b, const Tensor& w) {
  autodiff::Tape tape;
  tape.Watch(a);
  tape.Watch(b);
  absl::StatusOr<Tensor> out = f(a, b);
  EXPECT_TRUE(out.ok()) << out.status();
  absl::StatusOr<std::vector<std::optional<Tensor>>> g = tape.Gradient(*Sum(*Mul(*out, w)), {a, b});
  EXPECT_TRUE(g.ok()) << g.status();
  return {*out, *(*g)[0], *(*g)[1]};
}

TEST(AddReluTest, GivesTheBitsOfReluOfAdd) {
  const Tensor a = RandomTensor({3, 7, 5, 11}, 1), b = RandomTensor({3, 7, 5, 11}, 2);
  const Tensor w = RandomTensor({3, 7, 5, 11}, 3);
  const Differentiated fused =
      Differentiate([](const Tensor& x, const Tensor& y) { return AddRelu(x, y); }, a, b, w);
  const Differentiated plain =
      Differentiate([](const Tensor& x, const Tensor& y) { return Relu(*Add(x, y)); }, a, b, w);
  EXPECT_TRUE(fused.out.Equals(plain.out));
  EXPECT_TRUE(fused.grad_a.Equals(plain.grad_a));
  EXPECT_TRUE(fused.grad_b.Equals(plain.grad_b));
  EXPECT_THAT(Values(*AddRelu(T({1, -2, 0.5f, -1}, {4}), T({-3, 1, 0.25f, 1}, {4}))),
              ElementsAre(0, 0, 0.75f, 0));
}

TEST(AddReluTest, GradientsMatchFiniteDifferences) {
  // Sums clear of the kink at 0 by more than the step.
  EXPECT_EQ(CheckGradients(
                [](const std::vector<Tensor>& in) { return AddRelu(in[0], in[1]); },
                {T({1, -2, 0.5f, -1, 2, 0.3f}, {2, 3}), T({-3, 1, 0.25f, 1.5f, -1, 0.2f}, {2, 3})}),
            "");
}

TEST(AddReluTest, OperandsOfTwoShapesOrIntegersAreRefused) {
  EXPECT_EQ(AddRelu(T({1, 2}, {2}), T({1, 2, 3}, {3})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AddRelu(T({1, 2}, {2}), *Cast(T({1, 2}, {2}), DType::kInt32)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A bfloat16 copy of `t` (rounded to nearest even; these values are exact in bfloat16).
Tensor ToBFloat16(const Tensor& t) {
  Tensor out(DType::kBFloat16, t.shape());
  auto* p = static_cast<uint16_t*>(out.raw_data());
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = BFloat16::FromFloat(t.data<float>()[i]);
  return out;
}

TEST(AddReluTest, BFloat16OperandsAddInFloat32AndGetBFloat16Gradients) {
  absl::Status supported =
      backend::CheckPrecisionSupported(Device::Cpu(), backend::Precision::kMixedBFloat16);
  if (!supported.ok()) GTEST_SKIP() << supported.message();
  // 1 + 2^-8 is not a bfloat16, but the sum is taken in float32 and written so.
  const Tensor a = ToBFloat16(T({1, -2, 0.5f, 3}, {4}));
  const Tensor b = T({0.00390625f, 1, -1, -1}, {4});
  {
    // Outside the mixed policy the CPU's kernels read no bfloat16.
    EXPECT_EQ(AddRelu(a, b).status().code(), absl::StatusCode::kInvalidArgument);
  }
  backend::ScopedPrecision policy(backend::Precision::kMixedBFloat16);
  const Differentiated r =
      Differentiate([](const Tensor& x, const Tensor& y) { return AddRelu(x, y); }, a, b,
                    T({1, 2, 3, 4.00390625f}, {4}));
  EXPECT_EQ(r.out.dtype(), DType::kFloat32);
  EXPECT_THAT(Values(r.out), ElementsAre(1.00390625f, 0, 0, 2));
  ASSERT_EQ(r.grad_a.dtype(), DType::kBFloat16);
  ASSERT_EQ(r.grad_b.dtype(), DType::kFloat32);
  // The gradient 4 + 2^-8 rounds to 4 in bfloat16 and stays itself in float32.
  EXPECT_THAT(Values(r.grad_b), ElementsAre(1, 0, 0, 4.00390625f));
  const auto* ga = static_cast<const uint16_t*>(r.grad_a.raw_data());
  EXPECT_EQ(BFloat16::ToFloat(ga[0]), 1);
  EXPECT_EQ(BFloat16::ToFloat(ga[1]), 0);
  EXPECT_EQ(BFloat16::ToFloat(ga[3]), 4);
  // keep_compute_dtype: the float32 sum rounded once to bfloat16 (1 + 2^-8 to 1, a tie to even).
  absl::StatusOr<Tensor> kept = AddRelu(a, b, /*keep_compute_dtype=*/true);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->dtype(), DType::kBFloat16);
  EXPECT_THAT(Values(*Cast(*kept, DType::kFloat32)), ElementsAre(1, 0, 0, 2));
}

TEST(AddReluTest, KeepComputeDtypeIsFloat32OutsideTheMixedPolicy) {
  absl::StatusOr<Tensor> out = AddRelu(T({1, -1}, {2}), T({1, 0}, {2}), true);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->dtype(), DType::kFloat32);
}

}  // namespace
}  // namespace sluice::train::ops
