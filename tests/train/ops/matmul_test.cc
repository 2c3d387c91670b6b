#include "train/ops/matmul.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

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

TEST(MatMulTest, ForwardValues) {
  Tensor a = T({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = T({1, 0, 0, 1, 1, 1}, {3, 2});
  EXPECT_THAT(Values(*MatMul(a, b)), ElementsAre(4, 5, 10, 11));
  // a^T [3,2] x a [2,3]
  EXPECT_THAT(Values(*MatMul(a, a, {.transpose_a = true})),
              ElementsAre(17, 22, 27, 22, 29, 36, 27, 36, 45));
  // a [2,3] x a^T [3,2]
  EXPECT_THAT(Values(*MatMul(a, a, {.transpose_b = true})), ElementsAre(14, 32, 32, 77));
  // b^T [2,3] x a^T [3,2]  = (a b)^T
  EXPECT_THAT(Values(*MatMul(b, a, {.transpose_a = true, .transpose_b = true})),
              ElementsAre(4, 10, 5, 11));
}

TEST(MatMulTest, ShapeErrors) {
  EXPECT_FALSE(MatMul(T({1, 2}, {1, 2}), T({1, 2}, {1, 2})).ok());
  EXPECT_FALSE(MatMul(T({1, 2}, {2}), T({1, 2}, {2, 1})).ok());
}

TEST(MatMulTest, GradientsMatchFiniteDifferences) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = RandomTensor(ta ? Shape{4, 3} : Shape{3, 4}, 21);
      Tensor b = RandomTensor(tb ? Shape{5, 4} : Shape{4, 5}, 22);
      EXPECT_EQ(CheckGradients(
                    [ta, tb](const std::vector<Tensor>& in) {
                      return MatMul(in[0], in[1], {.transpose_a = ta, .transpose_b = tb});
                    },
                    {a, b}),
                "")
          << ta << tb;
    }
  }
}

}  // namespace
}  // namespace sluice::train::ops
