// MeanAbsoluteError against hand-computed Keras values and finite differences.
#include "train/losses/mean_absolute_error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"

namespace sluice::train::losses {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

TEST(MeanAbsoluteErrorTest, PerExampleAndMean) {
  // Errors [[0, 1], [2, -5]]: (0 + 1) / 2 = 0.5 and (2 + 5) / 2 = 3.5; mean 2.
  MeanAbsoluteError loss;
  EXPECT_EQ(loss.name(), "mean_absolute_error");
  Tensor y_pred = T({1, 2, 3, -4}, {2, 2});
  Tensor y_true = T({1, 1, 1, 1}, {2, 2});
  EXPECT_THAT(Values(*loss.PerExample(y_true, y_pred)), ElementsAre(0.5f, 3.5f));
  EXPECT_THAT(Values(*loss(y_true, y_pred)), ElementsAre(2.0f));
  EXPECT_THAT(Values(*loss.PerExample(Tensor::FromVector<int32_t>({0, 0}), T({-2, 3}, {2, 1}))),
              ElementsAre(2, 3));
}

TEST(MeanAbsoluteErrorTest, GradientIsSignOverTheCount) {
  // d/dy_pred mean_n mean_j |e| = sign(e) / (N * J) = +-1/4; 0 where e = 0.
  Tensor y_pred = T({1, 2, 3, -4}, {2, 2});
  Tensor y_true = T({1, 1, 1, 1}, {2, 2});
  autodiff::Tape tape;
  tape.Watch(y_pred);
  auto g = *tape.Gradient(*MeanAbsoluteError()(y_true, y_pred), {y_pred});
  EXPECT_THAT(Values(*g[0]), ElementsAre(0, 0.25f, 0.25f, -0.25f));
}

TEST(MeanAbsoluteErrorTest, GradientsMatchFiniteDifferences) {
  // Errors kept away from the kink at 0.
  const Tensor y_true = T({0, 0, 0, 0, 0, 0}, {3, 2});
  MeanAbsoluteError loss({.reduction = Reduction::kSum});
  EXPECT_EQ(CheckGradients([&](const std::vector<Tensor>& in) { return loss(y_true, in[0]); },
                           {T({0.5f, -0.7f, 1.2f, -0.1f, 0.3f, -2.0f}, {3, 2})}),
            "");
}

}  // namespace
}  // namespace sluice::train::losses
