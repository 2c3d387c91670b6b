// BinaryCrossentropy against hand-computed Keras values and finite differences.
#include "train/losses/binary_crossentropy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"

namespace sluice::train::losses {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

// softplus(x) - x z: x = 0, z = 0: log 2 = 0.6931472; x = 2, z = 1: log(1 + e^2) - 2 = 0.1269280;
// x = -1, z = 1: log(1 + e^-1) + 1 = 1.3132617.
TEST(BinaryCrossentropyTest, FromLogitsWithLabelsOneRankLess) {
  BinaryCrossentropy loss({.from_logits = true});
  EXPECT_EQ(loss.name(), "binary_crossentropy");
  Tensor logits = T({0, 2, -1}, {3, 1});
  Tensor labels = T({0, 1, 1}, {3});  // [N] for [N, 1]: expanded, as Keras
  EXPECT_THAT(Values(*loss.PerExample(labels, logits)),
              Pointwise(FloatNear(1e-6), {0.6931472f, 0.1269280f, 1.3132617f}));
  EXPECT_NEAR(Values(*loss(labels, logits))[0], (0.6931472 + 0.1269280 + 1.3132617) / 3, 1e-6);
  // Integer labels, and [N, 1] labels for [N] logits.
  EXPECT_THAT(Values(*loss.PerExample(Tensor::FromVector<int32_t>({0, 1, 1}), logits)),
              Pointwise(FloatNear(1e-6), {0.6931472f, 0.1269280f, 1.3132617f}));
  EXPECT_THAT(Values(*loss.PerExample(T({0, 1, 1}, {3, 1}), T({0, 2, -1}, {3}))),
              Pointwise(FloatNear(1e-6), {0.6931472f, 0.1269280f, 1.3132617f}));
  // Large logits neither overflow nor lose the loss: x = 100, z = 0 costs 100.
  EXPECT_THAT(Values(*loss.PerExample(T({0}, {1}), T({100}, {1}))),
              Pointwise(FloatNear(1e-4), {100.0f}));
}

TEST(BinaryCrossentropyTest, LabelSmoothing) {
  // 0.2: z = 1 -> 0.9. x = 0: still log 2; x = 2: log(1 + e^2) - 1.8 = 0.3269280.
  BinaryCrossentropy loss({.from_logits = true, .label_smoothing = 0.2f});
  EXPECT_THAT(Values(*loss.PerExample(T({1, 1}, {2}), T({0, 2}, {2}))),
              Pointwise(FloatNear(1e-6), {0.6931472f, 0.3269280f}));
}

// Per element -(z log p + (1 - z) log(1 - p)), averaged per example: example 0:
// (-log 0.5 - log 0.1) / 2 = (0.6931472 + 2.3025851) / 2 = 1.4978662; example 1: p = 1 is clipped
// to 1 - 1e-7 (about 0 loss) and -log 0.8 = 0.2231436: 0.1115718; example 2: p = 0 with z = 1 is
// clipped to 1e-7: (16.118096 + 0) / 2 = 8.059048.
TEST(BinaryCrossentropyTest, FromProbabilitiesClips) {
  BinaryCrossentropy loss;
  Tensor p = T({0.5f, 0.9f, 0.2f, 1.0f, 0.0f, 0.0f}, {3, 2});
  Tensor z = T({1, 0, 0, 1, 1, 0}, {3, 2});
  EXPECT_THAT(Values(*loss.PerExample(z, p)),
              Pointwise(FloatNear(1e-4), {1.4978662f, 0.1115718f, 8.059048f}));
}

TEST(BinaryCrossentropyTest, GradientsMatchFiniteDifferences) {
  const Tensor z = T({0, 1, 1, 0, 1, 0}, {3, 2});
  BinaryCrossentropy logits_loss({.from_logits = true, .label_smoothing = 0.1f});
  EXPECT_EQ(CheckGradients([&](const std::vector<Tensor>& in) { return logits_loss(z, in[0]); },
                           {RandomTensor({3, 2}, 1, -3.0f, 3.0f)}),
            "");
  BinaryCrossentropy probs_loss({.reduction = Reduction::kNone});
  EXPECT_EQ(CheckGradients([&](const std::vector<Tensor>& in) { return probs_loss(z, in[0]); },
                           {RandomTensor({3, 2}, 2, 0.1f, 0.9f)}),
            "");
}

TEST(BinaryCrossentropyTest, ShapeMismatchNamesBothShapes) {
  BinaryCrossentropy loss;
  absl::StatusOr<Tensor> r = loss(T({0, 1, 1}, {3}), T({0.1f, 0.2f, 0.3f, 0.4f}, {2, 2}));
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("binary_crossentropy"));
  EXPECT_THAT(r.status().message(), HasSubstr("[3]"));
  EXPECT_THAT(r.status().message(), HasSubstr("[2, 2]"));
}

}  // namespace
}  // namespace sluice::train::losses
