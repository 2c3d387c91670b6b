// SparseCategoricalCrossentropy against hand-computed Keras values and finite differences.
#include "train/losses/sparse_categorical_crossentropy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "core/status_macros.h"
#include "tests/train/gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/losses/categorical_crossentropy.h"
#include "train/ops/scalar.h"

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

TEST(SparseCategoricalCrossentropyTest, LabelSmoothing) {
  // 0.3 over 3 classes: label 2 -> [0.1, 0.1, 0.8] on log_softmax([1, 2, 3]) =
  // [-2.4076059, -1.4076059, -0.4076059]: 0.1 * 2.4076059 + 0.1 * 1.4076059 + 0.8 * 0.4076059 =
  // 0.7076059. A uniform row costs log 3 whatever the smoothing.
  SparseCategoricalCrossentropy loss({.from_logits = true, .label_smoothing = 0.3f});
  EXPECT_FLOAT_EQ(loss.label_smoothing(), 0.3f);
  Tensor logits = T({1, 2, 3, 1, 1, 1}, {2, 3});
  EXPECT_THAT(Values(*loss.PerExample(Tensor::FromVector<int64_t>({2, 0}), logits)),
              Pointwise(FloatNear(1e-6), {0.7076059f, 1.0986123f}));
  // The same as CategoricalCrossentropy's smoothing on the one-hot labels, from logits and from
  // probabilities (inside the clip range, where the two normalise alike).
  const Tensor labels = Tensor::FromVector<int64_t>({0, 3, 1, 2, 3});
  const Tensor one_hot = T({1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, {5, 4});
  for (bool from_logits : {true, false}) {
    SparseCategoricalCrossentropy sparse({.from_logits = from_logits, .label_smoothing = 0.1f});
    CategoricalCrossentropy dense({.from_logits = from_logits, .label_smoothing = 0.1f});
    const Tensor y_pred =
        from_logits ? RandomTensor({5, 4}, 4, -3.0f, 3.0f) : RandomTensor({5, 4}, 5, 0.1f, 0.9f);
    EXPECT_THAT(Values(*sparse.PerExample(labels, y_pred)),
                Pointwise(FloatNear(1e-5), Values(*dense.PerExample(one_hot, y_pred))))
        << from_logits;
  }
  // Smoothing 1 leaves only the uniform target: the mean of -log p over the classes.
  SparseCategoricalCrossentropy uniform({.from_logits = true, .label_smoothing = 1.0f});
  EXPECT_NEAR(
      Values(*uniform.PerExample(Tensor::FromVector<int64_t>({0}), T({1, 2, 3}, {1, 3})))[0],
      (2.4076059 + 1.4076059 + 0.4076059) / 3, 1e-6);
  for (float bad : {-0.1f, 1.5f, std::nanf("")}) {
    SparseCategoricalCrossentropy out_of_range({.from_logits = true, .label_smoothing = bad});
    absl::StatusOr<Tensor> r = out_of_range(Tensor::FromVector<int64_t>({2, 0}), logits);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("label_smoothing must be in [0, 1]"));
  }
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
  const Tensor seq_labels = *Tensor::FromVector<int64_t>({0, 2, 1, 1, 2, 0}, Shape{2, 3});
  for (float smoothing : {0.0f, 0.2f}) {
    SparseCategoricalCrossentropy loss({.from_logits = true, .label_smoothing = smoothing});
    EXPECT_EQ(CheckGradients([&](const std::vector<Tensor>& in) { return loss(seq_labels, in[0]); },
                             {RandomTensor({2, 3, 3}, 3, -2.0f, 2.0f)}),
              "")
        << smoothing;
    SparseCategoricalCrossentropy smoothed_probs({.label_smoothing = smoothing});
    EXPECT_EQ(
        CheckGradients([&](const std::vector<Tensor>& in) { return smoothed_probs(labels, in[0]); },
                       {RandomTensor({4, 4}, 6, 0.1f, 0.9f)}),
        "")
        << smoothing;
  }
}

// Called, the loss reduces in its kernel (FusedReduced); the values and gradients are those of
// PerExample then Reduce, bit for bit, from logits and from probabilities, labels [N] or [N, 1].
TEST(SparseCategoricalCrossentropyTest, FusedReductionGivesTheBitsOfPerExampleThenReduce) {
  const Tensor labels = *Tensor::FromVector<int32_t>({0, 3, 1, 2, 2, 1, 0}, Shape{7, 1});
  for (Reduction reduction : {Reduction::kSumOverBatchSize, Reduction::kSum}) {
    for (const bool from_logits : {true, false}) {
      SCOPED_TRACE(::testing::Message() << static_cast<int>(reduction) << " " << from_logits);
      SparseCategoricalCrossentropy loss({.from_logits = from_logits, .reduction = reduction});
      const Tensor y_pred = from_logits ? RandomTensor({7, 4}, 5, -3.0f, 3.0f)
                                        : RandomTensor({7, 4}, 5, 0.05f, 0.95f);
      auto run = [&](bool fused) -> std::pair<Tensor, Tensor> {
        autodiff::Tape tape;
        tape.Watch(y_pred);
        absl::StatusOr<Tensor> value =
            fused ? loss(labels, y_pred) : loss.Reduce(*loss.PerExample(labels, y_pred));
        EXPECT_TRUE(value.ok()) << value.status();
        auto grads = tape.Gradient(*value, {y_pred});
        EXPECT_TRUE(grads.ok()) << grads.status();
        return {*value, *(*grads)[0]};
      };
      const auto [fused_value, fused_grad] = run(true);
      const auto [value, grad] = run(false);
      EXPECT_TRUE(fused_value.Equals(value)) << Values(fused_value)[0] << " " << Values(value)[0];
      EXPECT_TRUE(fused_grad.Equals(grad));
    }
  }
}

// A subclass that overrides PerExample is called through it: the fused reduction, which would
// skip it, is the base class's alone.
TEST(SparseCategoricalCrossentropyTest, ASubclassesPerExampleIsNotSkipped) {
  class Doubled : public SparseCategoricalCrossentropy {
   public:
    Doubled() : SparseCategoricalCrossentropy({.from_logits = true}) {}
    absl::StatusOr<Tensor> PerExample(const Tensor& y_true, const Tensor& y_pred,
                                      ops::LabelRangeCheck* deferred) const override {
      SLUICE_ASSIGN_OR_RETURN(Tensor each,
                              SparseCategoricalCrossentropy::PerExample(y_true, y_pred, deferred));
      return ops::Scale(each, 2.0f);
    }
  };
  const Tensor labels = Tensor::FromVector<int64_t>({2, 0});
  const Tensor logits = T({1, 2, 3, 1, 1, 1}, {2, 3});
  absl::StatusOr<Tensor> base =
      SparseCategoricalCrossentropy({.from_logits = true})(labels, logits);
  absl::StatusOr<Tensor> doubled = Doubled()(labels, logits);
  ASSERT_TRUE(base.ok() && doubled.ok());
  EXPECT_FLOAT_EQ(Values(*doubled)[0], 2 * Values(*base)[0]);
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

TEST(SparseCategoricalCrossentropyTest, NoClassesIsAnError) {
  // No label is in range of zero classes; both reductions, fused and per example, refuse it.
  for (Reduction reduction : {Reduction::kSumOverBatchSize, Reduction::kNone}) {
    SparseCategoricalCrossentropy loss({.from_logits = true, .reduction = reduction});
    absl::StatusOr<Tensor> r =
        loss(Tensor::FromVector<int64_t>({0, 0}), Tensor(DType::kFloat32, Shape{2, 0}));
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("no classes"));
  }
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
