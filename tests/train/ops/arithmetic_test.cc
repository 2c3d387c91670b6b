#include "train/ops/arithmetic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/train/gradient_check.h"

namespace sluice::train::ops {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;

TEST(ArithmeticTest, ForwardWithBroadcasting) {
  Tensor a = T({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor row = T({10, 20, 30}, {3});
  Tensor col = T({2, 4}, {2, 1});
  EXPECT_THAT(Values(*Add(a, row)), ElementsAre(11, 22, 33, 14, 25, 36));
  EXPECT_THAT(Values(*Sub(a, row)), ElementsAre(-9, -18, -27, -6, -15, -24));
  EXPECT_THAT(Values(*Mul(a, col)), ElementsAre(2, 4, 6, 16, 20, 24));
  EXPECT_THAT(Values(*Div(a, col)), ElementsAre(0.5f, 1, 1.5f, 1, 1.25f, 1.5f));
  Tensor outer = *Mul(col, row);  // [2,1] x [3] -> [2,3]
  EXPECT_EQ(outer.shape(), Shape({2, 3}));
  EXPECT_THAT(Values(outer), ElementsAre(20, 40, 60, 40, 80, 120));
}

TEST(ArithmeticTest, IncompatibleShapesFail) {
  EXPECT_EQ(Add(T({1, 2}, {2}), T({1, 2, 3}, {3})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ArithmeticTest, RejectsNonFloat) {
  Tensor i = Tensor::FromVector<int32_t>({1, 2});
  EXPECT_EQ(Mul(i, T({1, 2}, {2})).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ArithmeticTest, BroadcastGradientIsSummed) {
  Tensor a = T({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = T({1, 1, 1}, {3});
  autodiff::Tape tape;
  tape.Watch(a);
  tape.Watch(b);
  auto g = *tape.Gradient(*Mul(a, b), {a, b});
  EXPECT_THAT(Values(*g[1]), ElementsAre(5, 7, 9));
  EXPECT_THAT(Values(*g[0]), ElementsAre(1, 1, 1, 1, 1, 1));
}

TEST(ArithmeticTest, GradientsMatchFiniteDifferences) {
  Tensor a = RandomTensor({2, 3, 4}, 1);
  Tensor b = RandomTensor({3, 1}, 2, 0.5f, 2.0f);  // away from 0 for Div
  for (auto op : {Add, Sub, Mul, Div}) {
    EXPECT_EQ(
        CheckGradients([op](const std::vector<Tensor>& in) { return op(in[0], in[1]); }, {a, b}),
        "");
    EXPECT_EQ(CheckGradients([op](const std::vector<Tensor>& in) { return op(in[1], in[0]); },
                             {RandomTensor({2, 3, 4}, 3, 0.5f, 2.0f), b}),
              "");
  }
}

TEST(ArithmeticTest, MaximumAndMinimumBroadcast) {
  Tensor a = T({1, 5, -2, 4}, {2, 2});
  Tensor b = T({3, 0}, {2});
  // [[max(1,3), max(5,0)], [max(-2,3), max(4,0)]]
  EXPECT_THAT(Values(*Maximum(a, b)), ElementsAre(3, 5, 3, 4));
  EXPECT_THAT(Values(*Minimum(a, b)), ElementsAre(1, 0, -2, 0));
  // b first: the same values, the broadcast on the other side.
  EXPECT_THAT(Values(*Maximum(b, a)), ElementsAre(3, 5, 3, 4));
}

TEST(ArithmeticTest, MaximumAndMinimumPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor a = T({nan, 1, 2}, {3});
  Tensor b = T({1, nan, 1}, {3});
  for (auto op : {Maximum, Minimum}) {
    std::vector<float> v = Values(*op(a, b));
    EXPECT_TRUE(std::isnan(v[0]));
    EXPECT_TRUE(std::isnan(v[1]));
    EXPECT_FALSE(std::isnan(v[2]));
  }
}

TEST(ArithmeticTest, MaximumGradientGoesToThePickAndTiesToA) {
  Tensor a = T({1, 2, 5}, {3});
  Tensor b = T({1, 3, 4}, {3});
  {
    autodiff::Tape tape;
    tape.Watch(a);
    tape.Watch(b);
    auto g = *tape.Gradient(*Maximum(a, b), {a, b});
    // max(1,1) is a tie -> a; max(2,3) -> b; max(5,4) -> a.
    EXPECT_THAT(Values(*g[0]), ElementsAre(1, 0, 1));
    EXPECT_THAT(Values(*g[1]), ElementsAre(0, 1, 0));
  }
  {
    autodiff::Tape tape;
    tape.Watch(a);
    tape.Watch(b);
    auto g = *tape.Gradient(*Minimum(a, b), {a, b});
    // min(1,1) tie -> a; min(2,3) -> a; min(5,4) -> b.
    EXPECT_THAT(Values(*g[0]), ElementsAre(1, 1, 0));
    EXPECT_THAT(Values(*g[1]), ElementsAre(0, 0, 1));
  }
}

TEST(ArithmeticTest, MaximumBroadcastGradientIsSummed) {
  Tensor a = T({1, 5, -2, 4}, {2, 2});
  Tensor b = T({3, 0}, {2});
  autodiff::Tape tape;
  tape.Watch(a);
  tape.Watch(b);
  auto g = *tape.Gradient(*Maximum(a, b), {a, b});
  // b's first column wins both rows (3 > 1, 3 > -2), a's second column wins both (5, 4 > 0).
  EXPECT_THAT(Values(*g[0]), ElementsAre(0, 1, 0, 1));
  EXPECT_THAT(Values(*g[1]), ElementsAre(2, 0));
}

TEST(ArithmeticTest, MaximumAndMinimumGradientsMatchFiniteDifferences) {
  // Every a is at least 0.05 from its column's b: no tie within the differences' reach.
  Tensor a = T({0.05f, 0.35f, 0.95f, 0.15f, 0.75f, 0.05f, 0.45f, 0.85f, 0.25f, 0.65f, 0.55f, 0.95f},
               {3, 4});
  Tensor b = T({0.5f, 0.2f, 0.8f, 0.4f}, {4});
  for (auto op : {Maximum, Minimum}) {
    EXPECT_EQ(
        CheckGradients([op](const std::vector<Tensor>& in) { return op(in[0], in[1]); }, {a, b}),
        "");
    EXPECT_EQ(
        CheckGradients([op](const std::vector<Tensor>& in) { return op(in[1], in[0]); }, {a, b}),
        "");
  }
}

TEST(ArithmeticTest, ComparisonsGiveZeroOrOneAndRecordNothing) {
  Tensor a = T({1, 2, 3}, {3});
  Tensor b = T({2}, {1});
  autodiff::Tape tape;
  tape.Watch(a);
  Tensor eq = *Equal(a, b), gt = *Greater(a, b);
  EXPECT_THAT(Values(eq), ElementsAre(0, 1, 0));
  EXPECT_THAT(Values(gt), ElementsAre(0, 0, 1));
  EXPECT_FALSE(tape.IsTracked(eq));
  EXPECT_FALSE(tape.IsTracked(gt));
}

TEST(ArithmeticTest, ElementwiseMathValues) {
  // e^1 = 2.7182817, e^-1 = 0.36787944
  EXPECT_THAT(Values(*Exp(T({0, 1, -1}, {3}))),
              Pointwise(FloatNear(1e-6), {1.0f, 2.7182817f, 0.36787944f}));
  // log(0.5) = -0.6931472
  EXPECT_THAT(Values(*Log(T({1, 2.7182817f, 0.5f}, {3}))),
              Pointwise(FloatNear(1e-6), {0.0f, 1.0f, -0.6931472f}));
  EXPECT_THAT(Values(*Abs(T({-2, 0, 3}, {3}))), ElementsAre(2, 0, 3));
  EXPECT_THAT(Values(*Square(T({-3, 0.5f}, {2}))), ElementsAre(9, 0.25f));
  EXPECT_EQ(Exp(Tensor::FromVector<int32_t>({1})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ArithmeticTest, AbsGradientIsSignAndZeroAtZero) {
  Tensor x = T({-2, 0, 3}, {3});
  autodiff::Tape tape;
  tape.Watch(x);
  auto g = *tape.Gradient(*Abs(x), {x});
  EXPECT_THAT(Values(*g[0]), ElementsAre(-1, 0, 1));
}

TEST(ArithmeticTest, ElementwiseMathGradientsMatchFiniteDifferences) {
  Tensor mixed = RandomTensor({3, 4}, 11, -2.0f, 2.0f);
  Tensor positive = RandomTensor({3, 4}, 12, 0.2f, 3.0f);
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Exp(in[0]); }, {mixed}), "");
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Log(in[0]); }, {positive}),
            "");
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Square(in[0]); }, {mixed}),
            "");
  // Away from the kink at 0.
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Abs(in[0]); }, {positive}),
            "");
  Tensor negative = RandomTensor({3, 4}, 13, -3.0f, -0.2f);
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Abs(in[0]); }, {negative}),
            "");
}

}  // namespace
}  // namespace sluice::train::ops
