#include "train/ops/cross_entropy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "tests/train/gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/ops/reduce.h"
#include "train/ops/scalar.h"

namespace sluice::train::ops {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;

TEST(CrossEntropyTest, ForwardValues) {
  // Row 0: logits [0, 0] -> loss ln 2. Row 1: [ln 1, ln 3], label 1 -> -ln(3/4).
  Tensor logits = T({0, 0, 0, std::log(3.0f)}, {2, 2});
  Tensor labels64 = Tensor::FromVector<int64_t>({0, 1});
  Tensor labels32 = Tensor::FromVector<int32_t>({0, 1});
  const std::vector<float> want = {std::log(2.0f), -std::log(0.75f)};
  EXPECT_THAT(Values(*SparseSoftmaxCrossEntropyWithLogits(logits, labels64)),
              Pointwise(FloatNear(1e-6), want));
  EXPECT_THAT(Values(*SparseSoftmaxCrossEntropyWithLogits(logits, labels32)),
              Pointwise(FloatNear(1e-6), want));
}

TEST(CrossEntropyTest, GradientIsSoftmaxMinusOneHot) {
  Tensor logits = T({0, 0, 0, std::log(3.0f)}, {2, 2});
  Tensor labels = Tensor::FromVector<int32_t>({0, 1});
  autodiff::Tape tape;
  tape.Watch(logits);
  auto g = *tape.Gradient(*SparseSoftmaxCrossEntropyWithLogits(logits, labels), {logits, labels});
  EXPECT_THAT(Values(*g[0]), Pointwise(FloatNear(1e-6), {-0.5f, 0.5f, 0.25f, -0.25f}));
  EXPECT_FALSE(g[1]);
}

TEST(CrossEntropyTest, GradientsMatchFiniteDifferences) {
  Tensor labels = Tensor::FromVector<int64_t>({2, 0, 4});
  EXPECT_EQ(CheckGradients(
                [](const std::vector<Tensor>& in) {
                  return SparseSoftmaxCrossEntropyWithLogits(in[0], in[1]);
                },
                {RandomTensor({3, 5}, 12, -2, 2), labels}),
            "");
}

TEST(CrossEntropyTest, BadLabelsAreErrors) {
  Tensor logits = T({0, 0, 0, 0}, {2, 2});
  EXPECT_EQ(SparseSoftmaxCrossEntropyWithLogits(logits, Tensor::FromVector<int32_t>({0, 2}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(SparseSoftmaxCrossEntropyWithLogits(logits, T({0, 1}, {2})).ok());  // float labels
  EXPECT_FALSE(SparseSoftmaxCrossEntropyWithLogits(logits, Tensor::FromVector<int32_t>({0})).ok());
}

// The reduced op (the loss's reduction in its kernel, one kernel backward) gives the bits of the
// per-example op followed by Mean (scale 1/N) or Sum (scale 1), forward and backward, with an
// upstream gradient other than 1 (the Scale after it). 1,000 rows are split across threads.
TEST(CrossEntropyTest, ReducedLossHasTheBitsOfMeanOrSumOverTheOp) {
  for (const int64_t n : {1, 64, 1000}) {
    for (const bool mean : {true, false}) {
      SCOPED_TRACE(::testing::Message() << n << (mean ? " mean" : " sum"));
      const int64_t c = 10;
      Tensor logits = RandomTensor({n, c}, 21, -4.0f, 4.0f);
      Tensor labels(DType::kInt32, Shape{n});
      for (int64_t i = 0; i < n; ++i) labels.flat<int32_t>()[i] = static_cast<int32_t>(i % c);
      const float scale = mean ? 1.0f / static_cast<float>(n) : 1.0f;
      auto run = [&](bool fused) -> std::pair<Tensor, Tensor> {
        autodiff::Tape tape;
        tape.Watch(logits);
        absl::StatusOr<Tensor> loss;
        if (fused) {
          loss = ReducedSparseSoftmaxCrossEntropyWithLogits(logits, labels, scale);
        } else {
          absl::StatusOr<Tensor> each = SparseSoftmaxCrossEntropyWithLogits(logits, labels);
          EXPECT_TRUE(each.ok());
          loss = mean ? Mean(*each) : Sum(*each);
        }
        EXPECT_TRUE(loss.ok()) << loss.status();
        absl::StatusOr<Tensor> scaled = Scale(*loss, 3.7f);
        auto grads = tape.Gradient(*scaled, {logits});
        EXPECT_TRUE(grads.ok()) << grads.status();
        return {*loss, *(*grads)[0]};
      };
      const auto [fused_loss, fused_grad] = run(true);
      const auto [loss, grad] = run(false);
      EXPECT_EQ(fused_loss.shape(), Shape{});
      EXPECT_TRUE(fused_loss.Equals(loss));
      EXPECT_TRUE(fused_grad.Equals(grad));
    }
  }
}

TEST(CrossEntropyTest, ReducedLossGivesLabelsNoGradient) {
  Tensor logits = T({0, 0, 0, std::log(3.0f)}, {2, 2});
  Tensor labels = Tensor::FromVector<int32_t>({0, 1});
  autodiff::Tape tape;
  tape.Watch(logits);
  auto g = *tape.Gradient(*ReducedSparseSoftmaxCrossEntropyWithLogits(logits, labels, 0.5f),
                          {logits, labels});
  // Half of SparseSoftmaxCrossEntropyWithLogits' softmax - one_hot, as Mean's gradient is.
  EXPECT_THAT(Values(*g[0]), Pointwise(FloatNear(1e-6), {-0.25f, 0.25f, 0.125f, -0.125f}));
  EXPECT_FALSE(g[1]);
}

TEST(CrossEntropyTest, ReducedGradientsMatchFiniteDifferences) {
  Tensor labels = Tensor::FromVector<int64_t>({2, 0, 4});
  for (const float scale : {1.0f, 1.0f / 3.0f}) {
    EXPECT_EQ(CheckGradients(
                  [&](const std::vector<Tensor>& in) {
                    return ReducedSparseSoftmaxCrossEntropyWithLogits(in[0], in[1], scale);
                  },
                  {RandomTensor({3, 5}, 13, -2, 2), labels}),
              "")
        << scale;
  }
}

TEST(CrossEntropyTest, ReducedLossChecksItsLabels) {
  Tensor logits = T({0, 0, 0, 0}, {2, 2});
  EXPECT_EQ(
      ReducedSparseSoftmaxCrossEntropyWithLogits(logits, Tensor::FromVector<int32_t>({0, 2}), 0.5f)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  LabelRangeCheck deferred;
  absl::StatusOr<Tensor> later = ReducedSparseSoftmaxCrossEntropyWithLogits(
      logits, Tensor::FromVector<int32_t>({0, 2}), 0.5f, &deferred);
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_EQ(deferred.Check().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::train::ops
