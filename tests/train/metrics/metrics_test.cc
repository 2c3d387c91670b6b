// The metrics (train/metrics.h) against hand-computed Keras results.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "tests/train/gradient_check.h"
#include "train/metrics/mean.h"
#include "train/metrics/sparse_categorical_accuracy.h"
#include "train/metrics/sparse_top_k_accuracy.h"
#include "train/ops/reduce.h"

namespace sluice::train::metrics {
namespace {

using ::sluice::train::testing::T;

TEST(MeanTest, WeightedMeanAndReset) {
  Mean mean("loss");
  EXPECT_EQ(mean.name(), "loss");
  EXPECT_EQ(*mean.Result(), 0.0);  // Keras: 0 before any update
  mean.Update(1.0);
  mean.Update(4.0, 3.0);  // (1 + 12) / 4
  EXPECT_DOUBLE_EQ(*mean.Result(), 13.0 / 4.0);
  EXPECT_DOUBLE_EQ(*mean.total(), 13.0);
  EXPECT_DOUBLE_EQ(mean.count(), 4.0);
  mean.Reset();
  EXPECT_EQ(*mean.Result(), 0.0);
  EXPECT_EQ(mean.count(), 0.0);
}

TEST(MeanTest, TensorCountsEveryElement) {
  Mean mean;
  ASSERT_TRUE(mean.Update(T({1, 2, 3, 6}, {2, 2})).ok());
  mean.Update(8.0);
  EXPECT_DOUBLE_EQ(*mean.Result(), 20.0 / 5.0);
  EXPECT_FALSE(mean.Update(Tensor::FromVector<int64_t>({1})).ok());
}

TEST(MeanTest, StateRoundTrips) {
  Mean a;
  a.Update(2.0, 2.0);
  Mean b;
  b.SetState(*a.total(), a.count());
  b.Update(5.0);
  EXPECT_DOUBLE_EQ(*b.Result(), 3.0);  // (4 + 5) / 3
}

// The sums are one float32 chain whenever they are read, so a loop that reads every step, one
// that reads once and one resumed from a saved state all report the same bits.
TEST(MeanTest, ReadingOrResumingDoesNotChangeTheSums) {
  Mean every_step, once, resumed;
  for (int i = 0; i < 500; ++i) {
    const Tensor batch = testing::RandomTensor({7}, static_cast<uint32_t>(i), 0.0f, 3.0f);
    ASSERT_TRUE(every_step.Update(batch).ok());
    ASSERT_TRUE(every_step.Result().ok());
    ASSERT_TRUE(once.Update(batch).ok());
    if (i == 250) {
      // A checkpoint of `once` here, restored into a fresh metric.
      resumed.SetState(*once.total(), once.count());
    }
    if (i > 250) {
      ASSERT_TRUE(resumed.Update(batch).ok());
    }
  }
  EXPECT_EQ(*every_step.Result(), *once.Result());
  EXPECT_EQ(*resumed.Result(), *once.Result());
  EXPECT_EQ(resumed.count(), once.count());
}

// The loss tracker's running total is the float32 chain total = total + round(loss * weight),
// as Keras' total += value * sample_weight: each product rounded, then each sum.
TEST(MeanTest, TheLossTrackersTotalRoundsEachProductThenEachSum) {
  Mean loss("loss");
  volatile float total = 0.0f;  // volatile: no fused multiply-add in the reference
  const std::vector<std::pair<float, float>> batches = {
      {0.1f, 64.0f}, {2.3456789f, 37.0f}, {1e-3f, 3.0f}, {0.7777777f, 64.0f}};
  for (const auto& [value, weight] : batches) {
    ASSERT_TRUE(loss.Update(Tensor::Scalar(value), weight).ok());
    volatile float product = value * weight;
    total = total + product;
  }
  EXPECT_EQ(static_cast<float>(*loss.total()), total);
}

TEST(SparseCategoricalAccuracyTest, ArgmaxAgainstLabels) {
  SparseCategoricalAccuracy acc;
  EXPECT_EQ(acc.name(), "accuracy");
  // Row argmaxes: 1, 0, 2, and a tie between 0 and 2 that goes to the first (0).
  Tensor preds = T({0.1f, 0.8f, 0.1f,  //
                    0.9f, 0.0f, 0.1f,  //
                    -5, -6, -1,        //
                    0.5f, 0.0f, 0.5f},
                   {4, 3});
  ASSERT_TRUE(acc.Update(Tensor::FromVector<int64_t>({1, 0, 1, 0}), preds).ok());
  EXPECT_DOUBLE_EQ(*acc.Result(), 3.0 / 4.0);
  // int32 labels of shape [N, 1] work too; 2 more rows, 1 right.
  Tensor labels32 = *Tensor::FromVector<int32_t>({2, 2}, Shape{2, 1});
  ASSERT_TRUE(acc.Update(labels32, T({0, 0, 1, 0, 1, 0}, {2, 3})).ok());
  EXPECT_DOUBLE_EQ(*acc.Result(), 4.0 / 6.0);
}

// Accuracy is mean(argmax == label) as Keras computes it, on rows with a NaN too: the row's
// class is ArgMax's (the first NaN), where it used to skip NaNs and disagree with ArgMax.
TEST(SparseCategoricalAccuracyTest, ANaNRowScoresAsArgMaxReadsIt) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor preds = T({1, nan, 3,  //
                          nan, 2, 0},
                         {2, 3});
  const absl::StatusOr<Tensor> argmax = ops::ArgMax(preds);
  ASSERT_TRUE(argmax.ok()) << argmax.status();
  EXPECT_EQ(argmax->data<int64_t>()[0], 1);
  EXPECT_EQ(argmax->data<int64_t>()[1], 0);
  SparseCategoricalAccuracy by_argmax;
  ASSERT_TRUE(by_argmax.Update(*argmax, preds).ok());
  EXPECT_DOUBLE_EQ(*by_argmax.Result(), 1.0);
  SparseCategoricalAccuracy largest_finite;  // the labels a NaN-skipping argmax would give
  ASSERT_TRUE(largest_finite.Update(Tensor::FromVector<int64_t>({2, 1}), preds).ok());
  EXPECT_DOUBLE_EQ(*largest_finite.Result(), 0.0);
}

TEST(SparseCategoricalAccuracyTest, RejectsMismatchedShapes) {
  SparseCategoricalAccuracy acc;
  absl::Status s = acc.Update(Tensor::FromVector<int64_t>({0, 1, 2}), T({1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("[2]"), std::string::npos) << s;
  EXPECT_FALSE(acc.Update(T({0, 1}, {2}), T({1, 2, 3, 4}, {2, 2})).ok());  // float labels
  EXPECT_FALSE(acc.Update(Tensor::FromVector<int64_t>({0, 1}), T({1, 2}, {2})).ok());
}

TEST(SparseTopKAccuracyTest, LabelAmongTopK) {
  SparseTopKAccuracy top2(2);
  EXPECT_EQ(top2.name(), "top_2_accuracy");
  Tensor preds = T({0.1f, 0.5f, 0.3f, 0.1f,   // order 1, 2, {0, 3}
                    0.4f, 0.3f, 0.2f, 0.1f},  // order 0, 1, 2, 3
                   {2, 4});
  // Row 0: label 2 is second: hit. Row 1: label 2 is third: miss.
  ASSERT_TRUE(top2.Update(Tensor::FromVector<int64_t>({2, 2}), preds).ok());
  EXPECT_DOUBLE_EQ(*top2.Result(), 0.5);
  // Row 0 again with label 0: tied with class 3 for third place, outside the top 2: miss.
  ASSERT_TRUE(top2.Update(Tensor::FromVector<int64_t>({0, 1}), preds).ok());
  EXPECT_DOUBLE_EQ(*top2.Result(), 2.0 / 4.0);
}

TEST(SparseTopKAccuracyTest, TiesAtTheBoundaryCountAsInTopK) {
  // in_top_k: classes tied with the k-th value are all in. Label 2 ties with class 1 for first.
  SparseTopKAccuracy top1(1);
  ASSERT_TRUE(top1.Update(Tensor::FromVector<int64_t>({2}), T({0, 1, 1}, {1, 3})).ok());
  EXPECT_DOUBLE_EQ(*top1.Result(), 1.0);
  // A non-finite prediction makes the row a miss, an out-of-range label too.
  SparseTopKAccuracy top5(5);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(top5.Update(Tensor::FromVector<int64_t>({0, 7}), T({1, nan, 2, 3}, {2, 2})).ok());
  EXPECT_DOUBLE_EQ(*top5.Result(), 0.0);
  // With k >= classes every finite row hits.
  ASSERT_TRUE(top5.Update(Tensor::FromVector<int32_t>({1}), T({3, 1}, {1, 2})).ok());
  EXPECT_DOUBLE_EQ(*top5.Result(), 1.0 / 3.0);
}

TEST(SparseTopKAccuracyTest, TopKOfOneIsAccuracyWithoutTies) {
  Tensor preds = T({0.2f, 0.7f, 0.1f, 0.6f, 0.3f, 0.1f, 0.1f, 0.2f, 0.7f}, {3, 3});
  Tensor labels = Tensor::FromVector<int64_t>({1, 1, 2});
  SparseTopKAccuracy top1(1);
  SparseCategoricalAccuracy acc;
  ASSERT_TRUE(top1.Update(labels, preds).ok());
  ASSERT_TRUE(acc.Update(labels, preds).ok());
  EXPECT_DOUBLE_EQ(*top1.Result(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(*acc.Result(), *top1.Result());
}

}  // namespace
}  // namespace sluice::train::metrics
