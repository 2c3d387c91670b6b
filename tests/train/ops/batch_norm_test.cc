#include "train/ops/batch_norm.h"

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

TEST(BatchNormTest, TrainingForward) {
  // Channel 0: {1, 3}: mean 2, var 1. Channel 1: {10, 30}: mean 20, var 100.
  Tensor x = T({1, 10, 3, 30}, {2, 2});
  auto r = *BatchNormTraining(x, T({2, 3}, {2}), T({0.5f, -1}, {2}), /*epsilon=*/0);
  EXPECT_THAT(Values(r.mean), ElementsAre(2, 20));
  EXPECT_THAT(Values(r.variance), ElementsAre(1, 100));
  EXPECT_THAT(Values(r.output), Pointwise(FloatNear(1e-6), {-1.5f, -4.0f, 2.5f, 2.0f}));
}

TEST(BatchNormTest, InferenceForward) {
  Tensor x = T({1, 10}, {1, 2});
  Tensor y = *BatchNormInference(x, T({2, 3}, {2}), T({0.5f, -1}, {2}), T({2, 20}, {2}),
                                 T({4, 100}, {2}), /*epsilon=*/0);
  EXPECT_THAT(Values(y), Pointwise(FloatNear(1e-6), {-0.5f, -4.0f}));
  EXPECT_FALSE(
      BatchNormInference(x, T({2}, {1}), T({0.5f, -1}, {2}), T({2, 20}, {2}), T({4, 100}, {2}))
          .ok());
}

TEST(BatchNormTest, GradientsMatchFiniteDifferences) {
  Tensor x = RandomTensor({2, 3, 3, 4}, 81, -2, 2);
  Tensor gamma = RandomTensor({4}, 82, 0.5f, 1.5f);
  Tensor beta = RandomTensor({4}, 83);
  EXPECT_EQ(CheckGradients(
                [](const std::vector<Tensor>& in) -> absl::StatusOr<Tensor> {
                  auto r = BatchNormTraining(in[0], in[1], in[2]);
                  if (!r.ok()) return r.status();
                  return r->output;
                },
                {x, gamma, beta}),
            "");
  EXPECT_EQ(CheckGradients(
                [](const std::vector<Tensor>& in) {
                  return BatchNormInference(in[0], in[1], in[2], in[3], in[4]);
                },
                {x, gamma, beta, RandomTensor({4}, 84), RandomTensor({4}, 85, 0.5f, 2.0f)},
                {.skip = {3, 4}}),
            "");
}

TEST(BatchNormTest, MovingStatisticsGetNoGradient) {
  Tensor x = RandomTensor({3, 2}, 86);
  Tensor mean = T({0, 0}, {2});
  autodiff::Tape tape;
  tape.Watch(x);
  tape.Watch(mean);
  Tensor y = *BatchNormInference(x, T({1, 1}, {2}), T({0, 0}, {2}), mean, T({1, 1}, {2}));
  auto g = *tape.Gradient(y, {x, mean});
  EXPECT_TRUE(g[0]);
  EXPECT_FALSE(g[1]);
}

}  // namespace
}  // namespace sluice::train::ops
