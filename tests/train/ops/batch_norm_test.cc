#include "train/ops/batch_norm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "tests/train/gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/ops/activations.h"
#include "train/ops/arithmetic.h"
#include "train/ops/reduce.h"

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

// y, and the gradients of sum(w * y) for x, gamma and beta.
struct BatchNormDifferentiated {
  Tensor y, mean, variance;
  std::vector<Tensor> grads;
};
BatchNormDifferentiated DifferentiateBatchNorm(bool fused, const Tensor& x, const Tensor& gamma,
                                               const Tensor& beta, const Tensor& w) {
  autodiff::Tape tape;
  for (const Tensor* t : {&x, &gamma, &beta}) tape.Watch(*t);
  absl::StatusOr<BatchNormTrainingResult> r = BatchNormTraining(x, gamma, beta);
  if (fused) {
    r = BatchNormReluTraining(x, gamma, beta);
  } else if (r.ok()) {
    absl::StatusOr<Tensor> relu = Relu(r->output);
    EXPECT_TRUE(relu.ok()) << relu.status();
    r->output = *relu;
  }
  EXPECT_TRUE(r.ok()) << r.status();
  absl::StatusOr<Tensor> loss = Sum(*Mul(r->output, w));
  absl::StatusOr<std::vector<std::optional<Tensor>>> g = tape.Gradient(*loss, {x, gamma, beta});
  EXPECT_TRUE(g.ok()) << g.status();
  return {r->output, r->mean, r->variance, {*(*g)[0], *(*g)[1], *(*g)[2]}};
}

TEST(BatchNormTest, FusedReluGivesTheBitsOfBatchNormThenRelu) {
  ASSERT_TRUE(backend::BackendFor(Device::Cpu()).value()->FusesBatchNormRelu());
  const Tensor x = RandomTensor({4, 5, 5, 8}, 90, -3, 3);
  const Tensor gamma = RandomTensor({8}, 91, 0.5f, 1.5f), beta = RandomTensor({8}, 92);
  const Tensor w = RandomTensor({4, 5, 5, 8}, 93);
  const BatchNormDifferentiated fused = DifferentiateBatchNorm(true, x, gamma, beta, w);
  const BatchNormDifferentiated plain = DifferentiateBatchNorm(false, x, gamma, beta, w);
  // Some outputs clipped, some not: the mask matters in both passes.
  const std::vector<float> y = Values(fused.y);
  EXPECT_GT(std::count(y.begin(), y.end(), 0.0f), 100);
  EXPECT_LT(std::count(y.begin(), y.end(), 0.0f), 700);
  EXPECT_TRUE(fused.y.Equals(plain.y));
  EXPECT_TRUE(fused.mean.Equals(plain.mean));
  EXPECT_TRUE(fused.variance.Equals(plain.variance));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(fused.grads[i].Equals(plain.grads[i])) << i;
}

TEST(BatchNormTest, FusedReluGradientsMatchFiniteDifferences) {
  // Inputs whose normalised values stay clear of the ReLU's kink at 0 by more than the step.
  Tensor x = T({-2, 1, 0.5f, -1, 1.5f, 2, -1, -0.5f, 1, -1.5f, 0.25f, 0.75f}, {2, 3, 2});
  Tensor gamma = T({1.2f, 0.8f}, {2}), beta = T({0.3f, -0.2f}, {2});
  EXPECT_EQ(CheckGradients(
                [](const std::vector<Tensor>& in) -> absl::StatusOr<Tensor> {
                  auto r = BatchNormReluTraining(in[0], in[1], in[2]);
                  if (!r.ok()) return r.status();
                  return r->output;
                },
                {x, gamma, beta}),
            "");
}

}  // namespace
}  // namespace sluice::train::ops
