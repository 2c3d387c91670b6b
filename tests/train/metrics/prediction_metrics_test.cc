// The compile(metrics=[...]) metrics against hand-computed Keras results, and MetricFromName.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/status_macros.h"
#include "tests/train/gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/metrics/binary_accuracy.h"
#include "train/metrics/categorical_accuracy.h"
#include "train/metrics/mean.h"
#include "train/metrics/mean_absolute_error.h"
#include "train/metrics/mean_metric_wrapper.h"
#include "train/metrics/mean_squared_error.h"
#include "train/metrics/metric_from_name.h"
#include "train/metrics/sparse_categorical_accuracy.h"
#include "train/metrics/sparse_top_k_accuracy.h"
#include "train/metrics/top_k_categorical_accuracy.h"
#include "train/ops/arithmetic.h"

namespace sluice::train::metrics {
namespace {

using ::sluice::train::testing::T;
using ::testing::HasSubstr;

TEST(CategoricalAccuracyTest, ArgmaxOfLabelsAgainstArgmaxOfPredictions) {
  // Row 0: argmax 2 = label 2, a hit; row 1: 0 vs label 1, a miss; row 2: a tie between 0 and 1
  // goes to the first, 0 = label 0, a hit. 2 / 3.
  CategoricalAccuracy m;
  EXPECT_EQ(m.name(), "categorical_accuracy");
  Tensor y_true = T({0, 0, 1, 0, 1, 0, 1, 0, 0}, {3, 3});
  Tensor y_pred = T({0.1f, 0.2f, 0.7f, 0.5f, 0.3f, 0.2f, 0.4f, 0.4f, 0.2f}, {3, 3});
  ASSERT_TRUE(m.Update(y_true, y_pred).ok());
  EXPECT_DOUBLE_EQ(*m.Result(), 2.0 / 3.0);
  // Integer one-hot labels: the same rows again, 4 of 6.
  ASSERT_TRUE(
      m.Update(*Tensor::FromVector<int32_t>({0, 0, 1, 0, 1, 0, 1, 0, 0}, Shape{3, 3}), y_pred)
          .ok());
  EXPECT_DOUBLE_EQ(*m.Result(), 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(m.count(), 6.0);
  absl::Status sparse = m.Update(Tensor::FromVector<int64_t>({2, 1, 0}), y_pred);
  EXPECT_EQ(sparse.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(sparse.message(), HasSubstr("[3, 3]"));
}

TEST(CategoricalAccuracyTest, EveryRowOfASequenceCounts) {
  // [1, 2, 2]: row (label 1, pred [0.2, 0.8]) a hit, row (label 0, pred [0.3, 0.7]) a miss.
  CategoricalAccuracy m;
  ASSERT_TRUE(m.Update(T({0, 1, 1, 0}, {1, 2, 2}), T({0.2f, 0.8f, 0.3f, 0.7f}, {1, 2, 2})).ok());
  EXPECT_DOUBLE_EQ(*m.Result(), 0.5);
  EXPECT_DOUBLE_EQ(m.count(), 2.0);
}

TEST(TopKCategoricalAccuracyTest, LabelAmongTheKHighest) {
  // Labels 2, 1, 0: label 2 is first in row 0, label 1 second in row 1, label 0 third in row 2.
  Tensor y_true = T({0, 0, 1, 0, 1, 0, 1, 0, 0}, {3, 3});
  Tensor y_pred = T({0.1f, 0.2f, 0.7f, 0.5f, 0.3f, 0.2f, 0.1f, 0.5f, 0.4f}, {3, 3});
  TopKCategoricalAccuracy top2(2);
  EXPECT_EQ(top2.name(), "top_k_categorical_accuracy");
  EXPECT_EQ(top2.k(), 2);
  ASSERT_TRUE(top2.Update(y_true, y_pred).ok());
  EXPECT_DOUBLE_EQ(*top2.Result(), 2.0 / 3.0);
  TopKCategoricalAccuracy top1(1, "top1");
  ASSERT_TRUE(top1.Update(y_true, y_pred).ok());
  EXPECT_DOUBLE_EQ(*top1.Result(), 1.0 / 3.0);
  EXPECT_FALSE(TopKCategoricalAccuracy(0).Update(y_true, y_pred).ok());
}

TEST(BinaryAccuracyTest, ThresholdedPredictionsAgainstLabels) {
  // [N] labels for [N, 1] predictions. > 0.5: [1, 1, 0, 0] against [1, 0, 1, 0]: 2 of 4.
  Tensor y_true = T({1, 0, 1, 0}, {4});
  Tensor y_pred = T({0.7f, 0.6f, 0.4f, 0.1f}, {4, 1});
  BinaryAccuracy m;
  EXPECT_EQ(m.name(), "binary_accuracy");
  ASSERT_TRUE(m.Update(y_true, y_pred).ok());
  EXPECT_DOUBLE_EQ(*m.Result(), 0.5);
  // > 0.35: [1, 1, 1, 0]: 3 of 4; integer labels.
  BinaryAccuracy low({.threshold = 0.35f});
  ASSERT_TRUE(low.Update(Tensor::FromVector<int64_t>({1, 0, 1, 0}), y_pred).ok());
  EXPECT_DOUBLE_EQ(*low.Result(), 0.75);
  // Logits with threshold 0 and multi-label [N, 2]: every element counts: 3 of 4.
  BinaryAccuracy logits({.threshold = 0.0f, .name = "acc"});
  ASSERT_TRUE(logits.Update(T({1, 0, 0, 1}, {2, 2}), T({2, -1, 0.5f, 3}, {2, 2})).ok());
  EXPECT_DOUBLE_EQ(*logits.Result(), 0.75);
  EXPECT_DOUBLE_EQ(logits.count(), 4.0);
  absl::Status bad = m.Update(T({1, 0, 1}, {3}), y_pred);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("binary_accuracy"));
}

TEST(MeanErrorMetricsTest, MeanSquaredAndAbsoluteError) {
  // Errors [[0, 1], [2, 3]]: squared per example 0.5 and 6.5; absolute 0.5 and 2.5.
  Tensor y_true = T({1, 1, 1, 1}, {2, 2});
  Tensor y_pred = T({1, 2, 3, 4}, {2, 2});
  MeanSquaredError mse;
  MeanAbsoluteError mae;
  EXPECT_EQ(mse.name(), "mean_squared_error");
  EXPECT_EQ(mae.name(), "mean_absolute_error");
  ASSERT_TRUE(mse.Update(y_true, y_pred).ok());
  ASSERT_TRUE(mae.Update(y_true, y_pred).ok());
  EXPECT_DOUBLE_EQ(*mse.Result(), 3.5);
  EXPECT_DOUBLE_EQ(*mae.Result(), 1.5);
  // One more example with error 0: (0.5 + 6.5 + 0) / 3.
  ASSERT_TRUE(mse.Update(T({1, 1}, {1, 2}), T({1, 1}, {1, 2})).ok());
  EXPECT_DOUBLE_EQ(*mse.Result(), 7.0 / 3.0);
  EXPECT_FALSE(mse.Update(T({1, 1, 1}, {3}), y_pred).ok());
}

TEST(MeanMetricWrapperTest, AveragesEveryValueWithRecordingPaused) {
  Tensor y_true = T({1, 1, 1, 1}, {2, 2});
  Tensor y_pred = T({1, 2, 3, 4}, {2, 2});
  autodiff::Tape tape;
  tape.Watch(y_pred);
  bool recording = true;
  MeanMetricWrapper m("abs_error", [&](const Tensor& t, const Tensor& p) -> absl::StatusOr<Tensor> {
    recording = autodiff::ShouldRecord({p});
    SLUICE_ASSIGN_OR_RETURN(Tensor e, ops::Sub(p, t));
    return ops::Abs(e);
  });
  ASSERT_TRUE(m.Update(y_true, y_pred).ok());
  EXPECT_FALSE(recording);
  EXPECT_DOUBLE_EQ(*m.Result(), 1.5);  // (0 + 1 + 2 + 3) / 4
  EXPECT_DOUBLE_EQ(m.count(), 4.0);
  MeanMetricWrapper ints("ints", [](const Tensor&, const Tensor&) -> absl::StatusOr<Tensor> {
    return Tensor::FromVector<int32_t>({1});
  });
  EXPECT_EQ(ints.Update(y_true, y_pred).code(), absl::StatusCode::kInvalidArgument);
}

TEST(MeanTest, DeviceScalarWeighted) {
  // Keras' loss tracker: batch loss 2 over 3 examples, then 4 over 1: (6 + 4) / 4.
  Mean loss("loss");
  ASSERT_TRUE(loss.Update(T({2}, {}), 3.0).ok());
  ASSERT_TRUE(loss.Update(T({4}, {1}), 1.0).ok());
  EXPECT_DOUBLE_EQ(*loss.Result(), 2.5);
  EXPECT_DOUBLE_EQ(loss.count(), 4.0);
  Tensor value = T({5}, {});
  ASSERT_TRUE(loss.Update(value, 2.0).ok());
  EXPECT_EQ(value.data<float>()[0], 5.0f);  // the caller's value is left alone
  EXPECT_DOUBLE_EQ(*loss.Result(), 20.0 / 6.0);
  EXPECT_EQ(loss.Update(T({1, 2}, {2}), 1.0).code(), absl::StatusCode::kInvalidArgument);
}

TEST(MetricFromNameTest, KerasStrings) {
  // "accuracy" follows the loss, and keeps the name the user gave.
  auto acc = *MetricFromName("accuracy", "sparse_categorical_accuracy");
  EXPECT_EQ(acc->name(), "accuracy");
  EXPECT_NE(dynamic_cast<SparseCategoricalAccuracy*>(acc.get()), nullptr);
  auto acc2 = *MetricFromName("acc", "binary_accuracy");
  EXPECT_EQ(acc2->name(), "acc");
  EXPECT_NE(dynamic_cast<BinaryAccuracy*>(acc2.get()), nullptr);
  EXPECT_NE(
      dynamic_cast<CategoricalAccuracy*>(MetricFromName("accuracy", "categorical_accuracy")->get()),
      nullptr);
  EXPECT_NE(dynamic_cast<CategoricalAccuracy*>(MetricFromName("categorical_accuracy")->get()),
            nullptr);
  EXPECT_NE(dynamic_cast<SparseCategoricalAccuracy*>(
                MetricFromName("sparse_categorical_accuracy")->get()),
            nullptr);
  auto top_k = *MetricFromName("top_k_categorical_accuracy");
  ASSERT_NE(dynamic_cast<TopKCategoricalAccuracy*>(top_k.get()), nullptr);
  EXPECT_EQ(dynamic_cast<TopKCategoricalAccuracy*>(top_k.get())->k(), 5);
  auto sparse_top_k = *MetricFromName("sparse_top_k_categorical_accuracy");
  ASSERT_NE(dynamic_cast<SparseTopKAccuracy*>(sparse_top_k.get()), nullptr);
  EXPECT_EQ(dynamic_cast<SparseTopKAccuracy*>(sparse_top_k.get())->k(), 5);
  EXPECT_EQ(sparse_top_k->name(), "sparse_top_k_categorical_accuracy");
  for (const char* name : {"mse", "mean_squared_error"}) {
    auto m = *MetricFromName(name);
    EXPECT_EQ(m->name(), name);
    EXPECT_NE(dynamic_cast<MeanSquaredError*>(m.get()), nullptr);
  }
  for (const char* name : {"mae", "mean_absolute_error"}) {
    EXPECT_NE(dynamic_cast<MeanAbsoluteError*>(MetricFromName(name)->get()), nullptr);
  }
}

TEST(MetricFromNameTest, Errors) {
  absl::StatusOr<std::unique_ptr<PredictionMetric>> no_accuracy = MetricFromName("accuracy", "");
  ASSERT_EQ(no_accuracy.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_accuracy.status().message(), HasSubstr("name the metric"));
  absl::StatusOr<std::unique_ptr<PredictionMetric>> unknown = MetricFromName("f1");
  ASSERT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("\"f1\""));
  EXPECT_THAT(unknown.status().message(), HasSubstr("binary_accuracy"));
}

TEST(PredictionMetricTest, UpdatesThroughTheBaseClass) {
  // What the Trainer does: one list, one Update(y_true, y_pred) per batch.
  std::vector<std::unique_ptr<PredictionMetric>> metrics;
  metrics.push_back(std::make_unique<SparseCategoricalAccuracy>());
  metrics.push_back(std::make_unique<SparseTopKAccuracy>(2));
  Tensor labels = Tensor::FromVector<int64_t>({2, 1});
  Tensor y_pred = T({0.1f, 0.2f, 0.7f, 0.5f, 0.3f, 0.2f}, {2, 3});
  for (auto& m : metrics) ASSERT_TRUE(m->Update(labels, y_pred).ok());
  EXPECT_DOUBLE_EQ(*metrics[0]->Result(), 0.5);  // row 1's argmax is 0, not 1
  EXPECT_DOUBLE_EQ(*metrics[1]->Result(), 1.0);  // but 1 is second
}

}  // namespace
}  // namespace sluice::train::metrics
