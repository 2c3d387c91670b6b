// CompiledLoss and CompiledMetrics (train/fit/compiled_{loss,metrics}.h): the regularisation
// penalty on top of the loss, label checks deferred and named by batch, and Keras' metric
// resolution.
#include "train/fit/compiled_loss.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/train/fit_test_util.h"
#include "train/backend/transfer.h"
#include "train/fit/compiled_metrics.h"
#include "train/layers/dense.h"
#include "train/layers/regularizer.h"
#include "train/losses/mean_squared_error.h"

namespace sluice::train::testing {
namespace {

float Read(const Tensor& t) {
  absl::StatusOr<float> v = backend::ReadScalar(t);
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : -1;
}

TEST(CompiledLossTest, TheDefaultIsTheClassifiersAndPenaltiesAreAdded) {
  auto model = TinyModel(3);
  ASSERT_TRUE(model->Build(Shape({2, kFeatures})).ok());
  fit::CompiledLoss plain(nullptr, *model);
  EXPECT_EQ(plain.loss().name(), "sparse_categorical_crossentropy");
  const Tensor logits = Tensor::FromVector<float>({0, 0, 0, 0, 0, 0});
  absl::StatusOr<Tensor> logits2 = logits.Reshape(Shape({2, 3}));
  ASSERT_TRUE(logits2.ok());
  absl::StatusOr<Tensor> loss =
      plain.Compute(Tensor::FromVector<int64_t>({0, 2}), *logits2, "batch 1: ");
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_NEAR(Read(*loss), std::log(3.0f), 1e-6);
}

TEST(CompiledLossTest, ABadLabelIsFoundWhenTheChecksAreReadAndNamesItsBatch) {
  auto model = TinyModel(3);
  fit::CompiledLoss loss(nullptr, *model);
  absl::StatusOr<Tensor> logits =
      Tensor::FromVector<float>({0, 0, 0, 0, 0, 0}).Reshape(Shape({2, 3}));
  ASSERT_TRUE(logits.ok());
  ASSERT_TRUE(loss.Compute(Tensor::FromVector<int64_t>({0, 1}), *logits, "batch 1: ").ok());
  ASSERT_TRUE(loss.Compute(Tensor::FromVector<int64_t>({1, 7}), *logits, "batch 2: ").ok());
  EXPECT_EQ(loss.unchecked_batches(), 2u);
  const absl::Status s = loss.CheckLabels();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("batch 2: ", 0), 0u) << s;
  EXPECT_EQ(loss.unchecked_batches(), 0u);
  EXPECT_TRUE(loss.CheckLabels().ok());
}

TEST(CompiledLossTest, AReductionOfNoneIsRefusedForTraining) {
  auto model = TinyModel(3);
  fit::CompiledLoss loss(std::make_shared<losses::MeanSquaredError>(losses::MeanSquaredErrorOptions{
                             .reduction = losses::Reduction::kNone}),
                         *model);
  const absl::Status s = loss.CheckReduced("Fit");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Fit: the loss 'mean_squared_error' has reduction none"),
            std::string::npos)
      << s;
}

TEST(CompiledMetricsTest, AccuracyResolvesByTheLossAndTopKIsAdded) {
  absl::StatusOr<std::unique_ptr<fit::CompiledMetrics>> m =
      fit::CompiledMetrics::Create({.top_k = 2}, losses::SparseCategoricalCrossentropy());
  ASSERT_TRUE(m.ok()) << m.status();
  fit::Replicas alone(nullptr, 0);
  absl::StatusOr<callbacks::Logs> logs = (*m)->Logs(alone);
  ASSERT_TRUE(logs.ok()) << logs.status();
  std::vector<std::string> names;
  for (const auto& [name, value] : *logs) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"accuracy", "loss", "top_2_accuracy"}));
}

TEST(CompiledMetricsTest, TwoMetricsOfOneNameAreRefused) {
  absl::StatusOr<std::unique_ptr<fit::CompiledMetrics>> m = fit::CompiledMetrics::Create(
      {.metrics = std::vector<fit::MetricSpec>{"mae", "mae"}}, losses::MeanSquaredError());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("two metrics are named"), std::string::npos) << m.status();
}

TEST(CompiledMetricsTest, TheRunningSumsRoundTrip) {
  absl::StatusOr<std::unique_ptr<fit::CompiledMetrics>> a =
      fit::CompiledMetrics::Create({}, losses::SparseCategoricalCrossentropy());
  absl::StatusOr<std::unique_ptr<fit::CompiledMetrics>> b =
      fit::CompiledMetrics::Create({}, losses::SparseCategoricalCrossentropy());
  ASSERT_TRUE(a.ok() && b.ok());
  absl::StatusOr<Tensor> logits =
      Tensor::FromVector<float>({2, 0, 0, 0, 2, 0}).Reshape(Shape({2, 3}));
  ASSERT_TRUE(logits.ok());
  ASSERT_TRUE(
      (*a)->Update(Tensor::Scalar<float>(0.5f), Tensor::FromVector<int64_t>({0, 2}), *logits).ok());
  absl::StatusOr<std::vector<fit::MetricState>> state = (*a)->State();
  ASSERT_TRUE(state.ok()) << state.status();
  (*b)->Restore(*state);
  fit::Replicas alone(nullptr, 0);
  absl::StatusOr<callbacks::Logs> la = (*a)->Logs(alone), lb = (*b)->Logs(alone);
  ASSERT_TRUE(la.ok() && lb.ok());
  EXPECT_EQ(*la, *lb);
  EXPECT_EQ(la->at("accuracy"), 0.5);
  EXPECT_EQ(la->at("loss"), 0.5);
}

}  // namespace
}  // namespace sluice::train::testing
