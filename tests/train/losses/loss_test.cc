// The Loss base (reductions), LossFunction and LossFromName.
#include "train/losses/loss.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/status_macros.h"
#include "tests/train/gradient_check.h"
#include "train/losses/binary_crossentropy.h"
#include "train/losses/categorical_crossentropy.h"
#include "train/losses/huber.h"
#include "train/losses/loss_from_name.h"
#include "train/losses/loss_function.h"
#include "train/losses/mean_absolute_error.h"
#include "train/losses/mean_squared_error.h"
#include "train/losses/sparse_categorical_crossentropy.h"
#include "train/ops/arithmetic.h"

namespace sluice::train::losses {
namespace {

using ::sluice::train::testing::CheckGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<Tensor> SquaredError(const Tensor& y_true, const Tensor& y_pred) {
  SLUICE_ASSIGN_OR_RETURN(Tensor e, ops::Sub(y_pred, y_true));
  return ops::Square(e);
}

TEST(LossTest, ReduceChecksItsInput) {
  MeanSquaredError loss;
  EXPECT_EQ(loss.Reduce(T({1, 2, 3, 4}, {2, 2})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Values(*loss.Reduce(T({1, 2, 3, 6}, {4}))), ElementsAre(3));
  // Keras' divide_no_nan: an empty batch's mean is 0.
  EXPECT_THAT(Values(*loss.Reduce(Tensor(DType::kFloat32, Shape{0}))), ElementsAre(0));
}

TEST(LossTest, LossFunctionAveragesOverNonBatchAxes) {
  // (y_pred - y_true)^2 per element, [2, 2]: the same numbers as MeanSquaredError.
  LossFunction loss("my_mse", SquaredError);
  EXPECT_EQ(loss.name(), "my_mse");
  EXPECT_EQ(loss.reduction(), Reduction::kSumOverBatchSize);
  Tensor y_pred = T({1, 2, 3, 4}, {2, 2});
  Tensor y_true = T({1, 1, 1, 1}, {2, 2});
  EXPECT_THAT(Values(*loss.PerExample(y_true, y_pred)), ElementsAre(0.5f, 6.5f));
  EXPECT_THAT(Values(*loss(y_true, y_pred)), ElementsAre(3.5f));
  LossFunction sum("sum", SquaredError, Reduction::kSum);
  EXPECT_THAT(Values(*sum(y_true, y_pred)), ElementsAre(7.0f));
  EXPECT_EQ(CheckGradients([&](const std::vector<Tensor>& in) { return loss(y_true, in[0]); },
                           {RandomTensor({2, 2}, 1)}),
            "");
}

TEST(LossTest, LossFunctionErrors) {
  LossFunction scalar(
      "scalar", [](const Tensor&, const Tensor&) -> absl::StatusOr<Tensor> { return T({1}, {}); });
  absl::StatusOr<Tensor> r = scalar(T({1, 2}, {2}), T({1, 2}, {2}));
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("per-example"));
  LossFunction failing("failing", [](const Tensor&, const Tensor&) -> absl::StatusOr<Tensor> {
    return absl::DataLossError("boom");
  });
  EXPECT_EQ(failing(T({1}, {1}), T({1}, {1})).status().code(), absl::StatusCode::kDataLoss);
}

template <typename L>
bool Is(const absl::StatusOr<std::unique_ptr<Loss>>& loss) {
  return loss.ok() && dynamic_cast<const L*>(loss->get()) != nullptr;
}

TEST(LossTest, LossFromNameTakesKerasStrings) {
  EXPECT_TRUE(Is<SparseCategoricalCrossentropy>(LossFromName("sparse_categorical_crossentropy")));
  EXPECT_TRUE(Is<CategoricalCrossentropy>(LossFromName("categorical_crossentropy")));
  EXPECT_TRUE(Is<BinaryCrossentropy>(LossFromName("binary_crossentropy")));
  EXPECT_TRUE(Is<MeanSquaredError>(LossFromName("mse")));
  EXPECT_TRUE(Is<MeanSquaredError>(LossFromName("mean_squared_error")));
  EXPECT_TRUE(Is<MeanAbsoluteError>(LossFromName("mae")));
  EXPECT_TRUE(Is<MeanAbsoluteError>(LossFromName("mean_absolute_error")));
  EXPECT_TRUE(Is<Huber>(LossFromName("huber")));
  EXPECT_EQ((*LossFromName("mse"))->name(), "mean_squared_error");
  // Keras' default: probabilities, not logits. -log(0.5) for the label's 0.5.
  auto sparse = *LossFromName("sparse_categorical_crossentropy");
  EXPECT_NEAR(Values(*(*sparse)(Tensor::FromVector<int64_t>({1}), T({0.5f, 0.5f}, {1, 2})))[0],
              0.6931472, 1e-6);
  absl::StatusOr<std::unique_ptr<Loss>> unknown = LossFromName("cross_entropy");
  ASSERT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("cross_entropy"));
  EXPECT_THAT(unknown.status().message(), HasSubstr("sparse_categorical_crossentropy"));
  EXPECT_THAT(unknown.status().message(), HasSubstr("mse"));
}

TEST(LossTest, AccuracyMetricFollowsTheLoss) {
  EXPECT_EQ(SparseCategoricalCrossentropy().AccuracyMetric(), "sparse_categorical_accuracy");
  EXPECT_EQ(CategoricalCrossentropy().AccuracyMetric(), "categorical_accuracy");
  EXPECT_EQ(BinaryCrossentropy().AccuracyMetric(), "binary_accuracy");
  EXPECT_EQ(MeanSquaredError().AccuracyMetric(), "");
  EXPECT_EQ(Huber().AccuracyMetric(), "");
  EXPECT_EQ(LossFunction("f", SquaredError).AccuracyMetric(), "");
}

}  // namespace
}  // namespace sluice::train::losses
