// CategoricalCrossentropy against hand-computed Keras values and finite differences.
#include "train/losses/categorical_crossentropy.h"

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

TEST(CategoricalCrossentropyTest, FromLogits) {
  // log_softmax([1, 2, 3]) = [-2.4076059, -1.4076059, -0.4076059]; a uniform row: -log 3.
  CategoricalCrossentropy loss({.from_logits = true});
  EXPECT_EQ(loss.name(), "categorical_crossentropy");
  Tensor logits = T({1, 2, 3, 1, 1, 1}, {2, 3});
  Tensor one_hot = T({0, 0, 1, 1, 0, 0}, {2, 3});
  EXPECT_THAT(Values(*loss.PerExample(one_hot, logits)),
              Pointwise(FloatNear(1e-6), {0.4076059f, 1.0986123f}));
  // Integer one-hot labels are cast.
  Tensor int_one_hot = *Tensor::FromVector<int32_t>({0, 0, 1, 1, 0, 0}, Shape{2, 3});
  EXPECT_NEAR(Values(*loss(int_one_hot, logits))[0], (0.4076059 + 1.0986123) / 2, 1e-6);
  // Large logits stay finite: log_softmax([1000, 0]) = [0, -1000].
  EXPECT_THAT(Values(*loss.PerExample(T({0, 1}, {1, 2}), T({1000, 0}, {1, 2}))),
              Pointwise(FloatNear(1e-3), {1000.0f}));
}

TEST(CategoricalCrossentropyTest, LabelSmoothing) {
  // 0.3 over 3 classes: [0, 0, 1] -> [0.1, 0.1, 0.8]:
  // 0.1 * 2.4076059 + 0.1 * 1.4076059 + 0.8 * 0.4076059 = 0.7076059. A uniform row: log 3.
  CategoricalCrossentropy loss({.from_logits = true, .label_smoothing = 0.3f});
  EXPECT_THAT(
      Values(*loss.PerExample(T({0, 0, 1, 1, 0, 0}, {2, 3}), T({1, 2, 3, 1, 1, 1}, {2, 3}))),
      Pointwise(FloatNear(1e-6), {0.7076059f, 1.0986123f}));
}

TEST(CategoricalCrossentropyTest, FromProbabilitiesNormalisesAndClips) {
  // Row 2 sums to 0.4: normalised [0.25, 0.25, 0.5], label 1: -log 0.25 = 1.3862944. Soft labels
  // [0.5, 0.5, 0] on [0.5, 0.25, 0.25]: 0.5 * 0.6931472 + 0.5 * 1.3862944 = 1.0397208. A zero
  // probability is clipped to 1e-7: -log(1e-7) = 16.118096.
  CategoricalCrossentropy loss;
  Tensor probs = T({0.2f, 0.3f, 0.5f, 0.1f, 0.1f, 0.2f, 0.5f, 0.25f, 0.25f, 0, 1, 0}, {4, 3});
  Tensor y = T({0, 0, 1, 0, 1, 0, 0.5f, 0.5f, 0, 1, 0, 0}, {4, 3});
  EXPECT_THAT(Values(*loss.PerExample(y, probs)),
              Pointwise(FloatNear(2e-4), {0.6931472f, 1.3862944f, 1.0397208f, 16.118096f}));
}

TEST(CategoricalCrossentropyTest, GradientsMatchFiniteDifferences) {
  const Tensor y = T({0, 1, 0, 0, 0, 0, 0, 1, 0.2f, 0.3f, 0.5f, 0}, {3, 4});
  CategoricalCrossentropy logits_loss({.from_logits = true, .label_smoothing = 0.1f});
  EXPECT_EQ(CheckGradients([&](const std::vector<Tensor>& in) { return logits_loss(y, in[0]); },
                           {RandomTensor({3, 4}, 1, -2.0f, 2.0f)}),
            "");
  CategoricalCrossentropy probs_loss({.reduction = Reduction::kSum});
  EXPECT_EQ(CheckGradients([&](const std::vector<Tensor>& in) { return probs_loss(y, in[0]); },
                           {RandomTensor({3, 4}, 2, 0.1f, 0.9f)}),
            "");
}

TEST(CategoricalCrossentropyTest, WrongLabelsAreErrors) {
  CategoricalCrossentropy loss;
  absl::StatusOr<Tensor> sparse =
      loss(Tensor::FromVector<int64_t>({0, 2}), T({1, 2, 3, 4, 5, 6}, {2, 3}));
  ASSERT_EQ(sparse.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(sparse.status().message(), HasSubstr("SparseCategoricalCrossentropy"));
  EXPECT_THAT(sparse.status().message(), HasSubstr("[2, 3]"));
  absl::StatusOr<Tensor> one_unit = loss(T({1, 0}, {2, 1}), T({0.3f, 0.6f}, {2, 1}));
  ASSERT_EQ(one_unit.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(one_unit.status().message(), HasSubstr("BinaryCrossentropy"));
}

}  // namespace
}  // namespace sluice::train::losses
