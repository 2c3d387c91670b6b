// SparseCategoricalCrossentropy against hand-computed Keras values and finite differences.
#include "train/losses/sparse_categorical_crossentropy.h"

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

// Row [1, 2, 3]: logsumexp = log(e + e^2 + e^3) = log(30.1928748) = 3.4076059, so label 2 costs
// 0.4076059 and label 0 costs 2.4076059; a uniform row costs log 3 = 1.0986123.
TEST(SparseCategoricalCrossentropyTest, FromLogits) {
  SparseCategoricalCrossentropy loss({.from_logits = true});
  EXPECT_EQ(loss.name(), "sparse_categorical_crossentropy");
  Tensor logits = T({1, 2, 3, 1, 1, 1}, {2, 3});
  Tensor labels = Tensor::FromVector<int64_t>({2, 0});
  EXPECT_THAT(Values(*loss.PerExample(labels, logits)),
              Pointwise(FloatNear(1e-6), {0.4076059f, 1.0986123f}));
  Tensor mean = *loss(labels, logits);
  EXPECT_EQ(mean.rank(), 0);
  EXPECT_NEAR(Values(mean)[0], (0.4076059 + 1.0986123) / 2, 1e-6);
  // int32 labels of shape [N, 1] are the same labels.
  Tensor labels32 = *Tensor::FromVector<int32_t>({2, 0}, Shape{2, 1});
  EXPECT_NEAR(Values(*loss(labels32, logits))[0], 0.7531091, 1e-6);
}

// Keras clips to [1e-7, 1 - 1e-7] and normalises: -log(0.5) = 0.6931472 for the first row; the
// second sums to 0.8, so its 0.4 is 0.5 too; the third gives label 0 probability 0, clipped to
// 1e-7 / (1 + 1e-7): -log = 16.118096 where the unclipped loss would be infinite.
TEST(SparseCategoricalCrossentropyTest, FromProbabilitiesClipsAndNormalises) {
  SparseCategoricalCrossentropy loss;
  EXPECT_FALSE(loss.from_logits());
  Tensor probs = T({0.2f, 0.3f, 0.5f, 0.2f, 0.2f, 0.4f, 0, 1, 0}, {3, 3});
  Tensor labels = Tensor::FromVector<int64_t>({2, 2, 0});
  EXPECT_THAT(Values(*loss.PerExample(labels, probs)),
              Pointwise(FloatNear(2e-4), {0.6931472f, 0.6931472f, 16.118096f}));
}

TEST(SparseCategoricalCrossentropyTest, SequenceLabelsAveragePerExample) {
  // y_pred [2, 2, 3], labels [2, 2]: example 0 has rows ([1,2,3], 2) and ([1,1,1], 0):
  // (0.4076059 + 1.0986123) / 2; example 1 has ([1,1,1], 1) and ([1,2,3], 0):
  // (1.0986123 + 2.4076059) / 2.
  SparseCategoricalCrossentropy loss({.from_logits = true});
  Tensor logits = T({1, 2, 3, 1, 1, 1, 1, 1, 1, 1, 2, 3}, {2, 2, 3});
  Tensor labels = *Tensor::FromVector<int64_t>({2, 0, 1, 0}, Shape{2, 2});
  EXPECT_THAT(Values(*loss.PerExample(labels, logits)),
              Pointwise(FloatNear(1e-6), {0.7531091f, 1.7531091f}));
}

TEST(SparseCategoricalCrossentropyTest, GradientsMatchFiniteDifferences) {
  const Tensor labels = Tensor::FromVector<int32_t>({0, 3, 1, 2});
  for (Reduction reduction : {Reduction::kSumOverBatchSize, Reduction::kSum, Reduction::kNone}) {
    SparseCategoricalCrossentropy logits_loss({.from_logits = true, .reduction = reduction});
    EXPECT_EQ(
        CheckGradients([&](const std::vector<Tensor>& in) { return logits_loss(labels, in[0]); },
                       {RandomTensor({4, 4}, 1, -2.0f, 2.0f)}),
        "");
    // Probabilities inside the clip range, where the clip passes the gradient.
    SparseCategoricalCrossentropy probs_loss({.reduction = reduction});
    EXPECT_EQ(
        CheckGradients([&](const std::vector<Tensor>& in) { return probs_loss(labels, in[0]); },
                       {RandomTensor({4, 4}, 2, 0.1f, 0.9f)}),
        "");
  }
  SparseCategoricalCrossentropy loss({.from_logits = true});
  const Tensor seq_labels = *Tensor::FromVector<int64_t>({0, 2, 1, 1, 2, 0}, Shape{2, 3});
  EXPECT_EQ(CheckGradients([&](const std::vector<Tensor>& in) { return loss(seq_labels, in[0]); },
                           {RandomTensor({2, 3, 3}, 3, -2.0f, 2.0f)}),
            "");
}

TEST(SparseCategoricalCrossentropyTest, OneOutputUnitIsAnError) {
  // Softmax over one class is 1 whatever the model says: loss 0, nothing learnt.
  SparseCategoricalCrossentropy loss({.from_logits = true});
  absl::StatusOr<Tensor> r =
      loss(Tensor::FromVector<int64_t>({0, 1, 1, 0}), RandomTensor({4, 1}, 1));
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("BinaryCrossentropy"));
  EXPECT_THAT(r.status().message(), HasSubstr("[4, 1]"));
}

TEST(SparseCategoricalCrossentropyTest, BadLabelsAreErrors) {
  SparseCategoricalCrossentropy loss;
  Tensor probs = RandomTensor({4, 3}, 1, 0.1f, 0.9f);
  absl::StatusOr<Tensor> float_labels = loss(T({0, 1, 2, 0}, {4}), probs);
  ASSERT_EQ(float_labels.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(float_labels.status().message(), HasSubstr("int32 or int64"));
  EXPECT_THAT(float_labels.status().message(), HasSubstr("CategoricalCrossentropy"));
  absl::StatusOr<Tensor> short_labels = loss(Tensor::FromVector<int64_t>({0, 1, 2}), probs);
  ASSERT_EQ(short_labels.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(short_labels.status().message(), HasSubstr("sparse_categorical_crossentropy"));
  EXPECT_THAT(short_labels.status().message(), HasSubstr("[3]"));
  EXPECT_THAT(short_labels.status().message(), HasSubstr("[4, 3]"));
  EXPECT_EQ(loss(Tensor::FromVector<int64_t>({0, 1, 2, 3}), probs).status().code(),
            absl::StatusCode::kInvalidArgument);  // 3 is outside [0, 3)
}

TEST(SparseCategoricalCrossentropyTest, DeferredLabelCheck) {
  SparseCategoricalCrossentropy loss({.from_logits = true});
  ops::LabelRangeCheck check;
  absl::StatusOr<Tensor> r =
      loss(Tensor::FromVector<int64_t>({0, 7}), RandomTensor({2, 3}, 1), &check);
  ASSERT_TRUE(r.ok()) << r.status();  // the bad label is found later, when the loop reads
  EXPECT_EQ(check.Check().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::train::losses
