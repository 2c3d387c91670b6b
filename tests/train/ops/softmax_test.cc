#include "train/ops/softmax.h"

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

TEST(SoftmaxTest, ForwardValues) {
  // Rows: [0, ln 2, ln 3] -> [1, 2, 3] / 6; a large shift changes nothing.
  Tensor x = T({0, std::log(2.0f), std::log(3.0f), 1000, 1000, 1000}, {2, 3});
  EXPECT_THAT(Values(*Softmax(x)), Pointwise(FloatNear(1e-6), {1.0f / 6, 2.0f / 6, 3.0f / 6,
                                                               1.0f / 3, 1.0f / 3, 1.0f / 3}));
}

TEST(SoftmaxTest, GradientsMatchFiniteDifferences) {
  EXPECT_EQ(CheckGradients([](const std::vector<Tensor>& in) { return Softmax(in[0]); },
                           {RandomTensor({2, 3, 5}, 11, -2, 2)}),
            "");
}

TEST(SoftmaxTest, ScalarIsRejected) { EXPECT_FALSE(Softmax(Tensor::Scalar(1.0f)).ok()); }

}  // namespace
}  // namespace sluice::train::ops
