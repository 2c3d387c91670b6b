// Regularizer (train/layers/regularizer.h): Keras' L1/L2 penalties by hand and by finite
// differences, and Dense/Conv2D's kernel_regularizer reaching Module::AddLosses.
#include "train/layers/regularizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/sequential.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;

TEST(RegularizerTest, PenaltiesByHand) {
  const Tensor w = T({1, -2, 0, 3}, {2, 2});
  // l2: 0.5 * (1 + 4 + 0 + 9) = 7; l1: 0.25 * (1 + 2 + 0 + 3) = 1.5.
  EXPECT_FLOAT_EQ(Regularizer::L2(0.5f).Penalty(w)->scalar<float>(), 7.0f);
  EXPECT_FLOAT_EQ(Regularizer::L1(0.25f).Penalty(w)->scalar<float>(), 1.5f);
  EXPECT_FLOAT_EQ(Regularizer::L1L2(0.25f, 0.5f).Penalty(w)->scalar<float>(), 8.5f);
  EXPECT_FALSE(Regularizer{}.active());
  EXPECT_FALSE(Regularizer{}.Penalty(w).ok());
}

TEST(RegularizerTest, FiniteDifferences) {
  // Away from 0, where |w| has no derivative.
  Tensor w = RandomTensor({3, 4}, 5, 0.2f, 1.0f);
  w.data<float>()[1] = -0.7f;
  const Regularizer r = Regularizer::L1L2(0.3f, 0.2f);
  EXPECT_EQ(CheckGradients([&](const std::vector<Tensor>& in) { return r.Penalty(in[0]); }, {w}),
            "");
}

TEST(RegularizerTest, LayersReportTheirKernelPenaltyOnly) {
  Sequential model{Dense(2, 3, {.kernel_regularizer = Regularizer::L2(1.0f)}),
                   Dense(3, 1),  // no regulariser: no loss
                   Conv2D(2, 3, {.kernel_regularizer = Regularizer::L1(1.0f)})};
  std::vector<Tensor> losses;
  ASSERT_TRUE(model.module(0).AddLosses(losses).ok());
  ASSERT_TRUE(model.module(1).AddLosses(losses).ok());
  ASSERT_EQ(losses.size(), 1u);
  double sum_sq = 0;
  for (float v :
       ::sluice::train::testing::Values(static_cast<Dense&>(model.module(0)).kernel().value())) {
    sum_sq += double{v} * v;
  }
  EXPECT_NEAR(losses[0].scalar<float>(), sum_sq, 1e-5);
  // An unbuilt layer has no kernel yet, so no penalty.
  std::vector<Tensor> lazy;
  ASSERT_TRUE(model.module(2).AddLosses(lazy).ok());
  EXPECT_TRUE(lazy.empty());
}

}  // namespace
}  // namespace sluice::train::layers
