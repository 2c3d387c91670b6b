// MeanSquaredError against hand-computed Keras values and finite differences.
#include "train/losses/mean_squared_error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"

namespace sluice::train::losses {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MeanSquaredErrorTest, PerExampleAndReductions) {
  // Errors [[0, 1], [2, 3]]: per example (0 + 1) / 2 = 0.5 and (4 + 9) / 2 = 6.5.
  Tensor y_pred = T({1, 2, 3, 4}, {2, 2});
  Tensor y_true = T({1, 1, 1, 1}, {2, 2});
  MeanSquaredError mean;
  EXPECT_EQ(mean.name(), "mean_squared_error");
  EXPECT_THAT(Values(*mean.PerExample(y_true, y_pred)), ElementsAre(0.5f, 6.5f));
  EXPECT_THAT(Values(*mean(y_true, y_pred)), ElementsAre(3.5f));
  EXPECT_THAT(Values(*MeanSquaredError({.reduction = Reduction::kSum})(y_true, y_pred)),
              ElementsAre(7.0f));
  Tensor none = *MeanSquaredError({.reduction = Reduction::kNone})(y_true, y_pred);
  EXPECT_EQ(none.shape(), Shape({2}));
  EXPECT_THAT(Values(none), ElementsAre(0.5f, 6.5f));
  // Integer labels are cast.
  Tensor int_true = *Tensor::FromVector<int64_t>({1, 1, 1, 1}, Shape{2, 2});
  EXPECT_THAT(Values(*mean.PerExample(int_true, y_pred)), ElementsAre(0.5f, 6.5f));
}

TEST(MeanSquaredErrorTest, LabelsOneRankLessOrMore) {
  // A regression head [N, 1] with labels [N] (the DQN's targets), and the other way round:
  // errors 1 and 3 either way.
  MeanSquaredError loss;
  EXPECT_THAT(Values(*loss.PerExample(T({1, 1}, {2}), T({2, 4}, {2, 1}))), ElementsAre(1, 9));
  EXPECT_THAT(Values(*loss.PerExample(T({1, 1}, {2, 1}), T({2, 4}, {2}))), ElementsAre(1, 9));
  EXPECT_THAT(Values(*loss.PerExample(Tensor::FromVector<int32_t>({1, 1}), T({2, 4}, {2, 1}))),
              ElementsAre(1, 9));
}

TEST(MeanSquaredErrorTest, ShapeMismatchNamesTheLossAndBothShapes) {
  absl::StatusOr<Tensor> r = MeanSquaredError()(T({1, 2, 3}, {3}), T({1, 2}, {2, 1}));
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("mean_squared_error"));
  EXPECT_THAT(r.status().message(), HasSubstr("[3]"));
  EXPECT_THAT(r.status().message(), HasSubstr("[2, 1]"));
  EXPECT_EQ(MeanSquaredError()(T({1}, {1}), T({1}, {})).status().code(),
            absl::StatusCode::kInvalidArgument);  // no batch axis
}

TEST(MeanSquaredErrorTest, GradientsMatchFiniteDifferences) {
  const Tensor y_true = RandomTensor({3, 2, 2}, 1);
  for (Reduction reduction : {Reduction::kSumOverBatchSize, Reduction::kSum, Reduction::kNone}) {
    MeanSquaredError loss({.reduction = reduction});
    EXPECT_EQ(CheckGradients([&](const std::vector<Tensor>& in) { return loss(y_true, in[0]); },
                             {RandomTensor({3, 2, 2}, 2)}),
              "");
  }
  // The gradient reaches float labels too (a loss is differentiable in both).
  MeanSquaredError loss;
  EXPECT_EQ(CheckGradients([&](const std::vector<Tensor>& in) { return loss(in[0], in[1]); },
                           {RandomTensor({4}, 3), RandomTensor({4, 1}, 4)}),
            "");
}

}  // namespace
}  // namespace sluice::train::losses
