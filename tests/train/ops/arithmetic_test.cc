#include "train/ops/arithmetic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"

namespace sluice::train::ops {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

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

}  // namespace
}  // namespace sluice::train::ops
