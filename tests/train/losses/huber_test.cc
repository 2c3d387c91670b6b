// Huber against hand-computed Keras values and finite differences.
#include "train/losses/huber.h"

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
using ::testing::FloatNear;
using ::testing::Pointwise;

TEST(HuberTest, QuadraticInsideLinearOutside) {
  // Errors [[0.5, -2], [1, 3]]. delta 1: 0.5 * 0.25 = 0.125; 1 * (2 - 0.5) = 1.5; 0.5 * 1 = 0.5;
  // 1 * (3 - 0.5) = 2.5: per example 0.8125 and 1.5.
  Tensor y_true = T({0, 0, 0, 0}, {2, 2});
  Tensor y_pred = T({0.5f, -2, 1, 3}, {2, 2});
  Huber loss;
  EXPECT_EQ(loss.name(), "huber_loss");
  EXPECT_FLOAT_EQ(loss.delta(), 1.0f);
  EXPECT_THAT(Values(*loss.PerExample(y_true, y_pred)), ElementsAre(0.8125f, 1.5f));
  // delta 2: 0.125; 0.5 * 4 = 2; 0.5; 2 * (3 - 1) = 4: per example 1.0625 and 2.25.
  EXPECT_THAT(Values(*Huber({.delta = 2})(y_true, y_pred)), Pointwise(FloatNear(1e-6), {1.65625f}));
  EXPECT_THAT(Values(*Huber({.delta = 2, .reduction = Reduction::kNone})(y_true, y_pred)),
              ElementsAre(1.0625f, 2.25f));
  EXPECT_EQ(Huber({.delta = 0})(y_true, y_pred).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HuberTest, GradientIsErrorInsideAndDeltaOutside) {
  // d/de: e inside (0.5, and 1 at the bound), delta * sign(e) outside (-1, 1); over N * J = 4.
  Tensor y_true = T({0, 0, 0, 0}, {2, 2});
  Tensor y_pred = T({0.5f, -2, 1, 3}, {2, 2});
  autodiff::Tape tape;
  tape.Watch(y_pred);
  auto g = *tape.Gradient(*Huber()(y_true, y_pred), {y_pred});
  EXPECT_THAT(Values(*g[0]), Pointwise(FloatNear(1e-7), {0.125f, -0.25f, 0.25f, 0.25f}));
}

TEST(HuberTest, GradientsMatchFiniteDifferences) {
  const Tensor y_true = RandomTensor({4, 3}, 1);
  Huber loss({.delta = 0.7f});
  EXPECT_EQ(CheckGradients([&](const std::vector<Tensor>& in) { return loss(y_true, in[0]); },
                           {RandomTensor({4, 3}, 2, -3.0f, 3.0f)}),
            "");
}

}  // namespace
}  // namespace sluice::train::losses
