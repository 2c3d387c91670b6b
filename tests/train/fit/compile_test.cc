// Trainer with Keras' compile(loss, metrics) and a custom train_step (train/fit/train_step.h):
// regression, binary classification, a callable loss, and the errors a new user meets first.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/status_macros.h"
#include "tests/train/fit_test_util.h"
#include "train/autodiff/tape.h"
#include "train/fit/trainer.h"
#include "train/losses/binary_crossentropy.h"
#include "train/losses/loss_function.h"
#include "train/losses/mean_squared_error.h"
#include "train/metrics/mean_absolute_error.h"
#include "train/ops/arithmetic.h"
#include "train/optimizers/adam.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::fit {
namespace {

using ::sluice::train::testing::BlobsDataset;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::TinyModel;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// y = 2 x0 - x1 + 0.5 on 256 points: {x float32 [n, 2], y float32 [n, 1]}.
Dataset LinearData(int64_t batch) {
  Tensor x = RandomTensor({256, 2}, 3);
  Tensor y(DType::kFloat32, Shape{256, 1});
  for (int i = 0; i < 256; ++i) {
    const float* xi = x.data<float>() + 2 * i;
    y.data<float>()[i] = 2 * xi[0] - xi[1] + 0.5f;
  }
  return Dataset::FromTensorSlices({x, y}).Batch(batch);
}

std::vector<std::string> Keys(const History& h) {
  std::vector<std::string> out;
  for (const auto& [k, v] : h.history) {
    if (k != "learning_rate" && k != "input_wait_share" && k != "images_per_second") {
      out.push_back(k);
    }
  }
  return out;
}

// The metrics are written as Keras' list is; {"accuracy", "mae"} did not compile.
TEST(CompileTest, MetricsAreWrittenAsKerasWritesItsList) {
  const TrainerOptions two{.metrics = {"accuracy", "mae"}};
  ASSERT_TRUE(two.metrics);
  ASSERT_EQ(two.metrics->size(), 2u);
  EXPECT_EQ((*two.metrics)[1].name, "mae");
  const TrainerOptions nested{.metrics = {{"accuracy", "mae"}}};
  EXPECT_EQ(nested.metrics->size(), 2u);
  const TrainerOptions one{.metrics = {{"accuracy"}}};
  EXPECT_EQ(one.metrics->size(), 1u);
  EXPECT_FALSE(TrainerOptions{}.metrics);  // unset: the default loss's accuracy
  const TrainerOptions none{.metrics = std::vector<MetricSpec>{}};
  EXPECT_TRUE(none.metrics && none.metrics->empty());  // set: no metrics
}

TEST(CompileTest, RegressionWithMseAndMaeMetric) {
  layers::Sequential model{layers::Dense(1, layers::Activation::kLinear, {.seed = 1})};
  optimizers::Adam adam(optimizers::AdamOptions{.learning_rate = 0.05f});
  Trainer trainer(model, adam,
                  {.loss = std::make_shared<losses::MeanSquaredError>(), .metrics = {{"mae"}}});
  absl::StatusOr<History> h = trainer.Fit(LinearData(32), {.epochs = 40, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_THAT(Keys(*h), UnorderedElementsAre("loss", "mae"));
  EXPECT_LT(h->at("loss").back(), 1e-3);
  EXPECT_LT(h->at("mae").back(), 0.03);
  // The mean absolute error is at most the root of the mean square one (Jensen).
  EXPECT_LE(h->at("mae").back(), std::sqrt(h->at("loss").back()) + 1e-6);
  absl::StatusOr<callbacks::Logs> eval = trainer.Evaluate(LinearData(64));
  ASSERT_TRUE(eval.ok()) << eval.status();
  EXPECT_LT(eval->at("loss"), 1e-3);
  // Predict returns [N, 1].
  absl::StatusOr<Tensor> pred = trainer.Predict(LinearData(64));
  ASSERT_TRUE(pred.ok()) << pred.status();
  EXPECT_EQ(pred->shape(), (Shape{256, 1}));
}

TEST(CompileTest, BinaryClassifierResolvesAccuracyToBinaryAccuracy) {
  // Label: whether the blob's class is 0, from one logit.
  Element blobs = testing::Blobs(240, 5);
  Tensor labels(DType::kFloat32, Shape{240});
  for (int i = 0; i < 240; ++i) labels.data<float>()[i] = blobs[1].data<int64_t>()[i] == 0;
  Dataset data = Dataset::FromTensorSlices({blobs[0], labels}).Batch(24);
  layers::Sequential model{layers::Dense(8, layers::Activation::kRelu, {.seed = 2}),
                           layers::Dense(1, layers::Activation::kLinear, {.seed = 3})};
  optimizers::Adam adam(optimizers::AdamOptions{.learning_rate = 0.03f});
  Trainer trainer(model, adam,
                  {.loss = std::make_shared<losses::BinaryCrossentropy>(
                       losses::BinaryCrossentropyOptions{.from_logits = true}),
                   .metrics = {{"accuracy"}}});
  absl::StatusOr<History> h = trainer.Fit(data, {.epochs = 15, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_GE(h->at("accuracy").back(), 0.97);
}

TEST(CompileTest, ACallableLossAndACustomMetric) {
  // Keras allows any function as a loss: here the MSE written by hand.
  auto mse = std::make_shared<losses::LossFunction>(
      "my_mse", [](const Tensor& y_true, const Tensor& y_pred) -> absl::StatusOr<Tensor> {
        SLUICE_ASSIGN_OR_RETURN(Tensor d, ops::Sub(y_pred, y_true));
        return ops::Square(d);  // [N, 1]: averaged over the non-batch axis
      });
  layers::Sequential a{layers::Dense(1, layers::Activation::kLinear, {.seed = 4})};
  layers::Sequential b{layers::Dense(1, layers::Activation::kLinear, {.seed = 4})};
  optimizers::Sgd sgd_a(optimizers::SgdOptions{.learning_rate = 0.1f});
  optimizers::Sgd sgd_b(optimizers::SgdOptions{.learning_rate = 0.1f});
  Trainer by_hand(a, sgd_a,
                  {.loss = mse, .metrics = std::vector<MetricSpec>{MetricSpec("my_mae", [] {
                                  return std::make_unique<metrics::MeanAbsoluteError>("my_mae");
                                })}});
  Trainer built_in(b, sgd_b, {.loss = std::make_shared<losses::MeanSquaredError>()});
  absl::StatusOr<History> ha = by_hand.Fit(LinearData(32), {.epochs = 3, .verbose = 0});
  absl::StatusOr<History> hb = built_in.Fit(LinearData(32), {.epochs = 3, .verbose = 0});
  ASSERT_TRUE(ha.ok()) << ha.status();
  ASSERT_TRUE(hb.ok()) << hb.status();
  EXPECT_EQ(ha->at("loss"), hb->at("loss"));
  EXPECT_EQ(ha->at("my_mae").size(), 3u);
}

TEST(CompileTest, CustomTrainStepEqualsTheBuiltInStep) {
  auto a = TinyModel(8);
  auto b = TinyModel(8);
  optimizers::Adam adam_a(optimizers::AdamOptions{.learning_rate = 0.02f});
  optimizers::Adam adam_b(optimizers::AdamOptions{.learning_rate = 0.02f});
  int calls = 0;
  // The seeds' train_step: tape.gradient, apply_gradients, compiled metrics.
  TrainStepFn step = [&](TrainStepContext& ctx) -> absl::Status {
    ++calls;
    autodiff::Tape tape;
    SLUICE_ASSIGN_OR_RETURN(Tensor y_pred, ctx.model().Forward(ctx.x(), /*training=*/true));
    SLUICE_ASSIGN_OR_RETURN(Tensor loss, ctx.ComputeLoss(y_pred));
    std::vector<autodiff::Variable*> vars = ctx.model().TrainableVariables();
    SLUICE_ASSIGN_OR_RETURN(std::vector<std::optional<Tensor>> grads, tape.Gradient(loss, vars));
    SLUICE_RETURN_IF_ERROR(ctx.ApplyGradients(grads, vars));
    return ctx.UpdateMetrics(loss, y_pred);
  };
  Trainer custom(*a, adam_a, {.train_step = step});
  Trainer built_in(*b, adam_b);
  absl::StatusOr<History> ha = custom.Fit(BlobsDataset(96, 7, 32), {.epochs = 2, .verbose = 0});
  absl::StatusOr<History> hb = built_in.Fit(BlobsDataset(96, 7, 32), {.epochs = 2, .verbose = 0});
  ASSERT_TRUE(ha.ok()) << ha.status();
  ASSERT_TRUE(hb.ok()) << hb.status();
  EXPECT_EQ(calls, 6);
  EXPECT_EQ(ha->at("loss"), hb->at("loss"));
  EXPECT_EQ(ha->at("accuracy"), hb->at("accuracy"));
}

TEST(CompileTest, ErrorsANewUserMeets) {
  optimizers::Adam adam;
  {
    // Integer labels and one output unit under the default loss: an error, not loss 0.
    layers::Sequential one_unit{layers::Dense(testing::kFeatures, 1)};
    Trainer t(one_unit, adam);
    absl::Status s = t.Fit(BlobsDataset(32, 1, 8), {.verbose = 0}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("BinaryCrossentropy"));
  }
  {
    // "accuracy" has no meaning for a regression loss.
    layers::Sequential m{layers::Dense(2, 1)};
    Trainer t(m, adam,
              {.loss = std::make_shared<losses::MeanSquaredError>(), .metrics = {{"accuracy"}}});
    absl::Status s = t.Fit(LinearData(32), {.verbose = 0}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("accuracy"));
  }
  {
    layers::Sequential m{layers::Dense(2, 1)};
    Trainer t(m, adam,
              {.loss = std::make_shared<losses::MeanSquaredError>(
                   losses::MeanSquaredErrorOptions{.reduction = losses::Reduction::kNone})});
    absl::Status s = t.Fit(LinearData(32), {.verbose = 0}).status();
    EXPECT_THAT(s.message(), HasSubstr("reduction none"));
  }
}

}  // namespace
}  // namespace sluice::train::fit
