// EarlyStopping (train/early_stopping.h): Keras 3's patience rule and best-weight restoring.
#include "train/callbacks/early_stopping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/fit_test_util.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::callbacks {
namespace {

using ::sluice::train::testing::BlobsDataset;
using ::sluice::train::testing::Fill;
using ::sluice::train::testing::RecordingCallback;
using ::sluice::train::testing::T;
using ::sluice::train::testing::TinyModel;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

std::vector<std::vector<float>> VariableValues(layers::Module& model) {
  std::vector<std::vector<float>> out;
  for (autodiff::Variable* v : model.Variables()) out.push_back(Values(v->value()));
  return out;
}

TEST(EarlyStoppingTest, StopsAfterPatienceAndRestoresTheBestEpoch) {
  auto model = TinyModel(1);
  optimizers::Sgd sgd;
  fit::Trainer trainer(*model, sgd);
  EarlyStopping es(
      {.monitor = "val_loss", .patience = 2, .restore_best_weights = true, .verbose = 1});
  es.set_trainer(&trainer);
  ASSERT_TRUE(es.OnTrainBegin({}).ok());
  const std::vector<double> val_loss = {1.0, 0.5, 0.7, 0.6};
  ::testing::internal::CaptureStdout();
  for (int epoch = 0; epoch < 4; ++epoch) {
    Fill(*model, static_cast<float>(epoch));
    ASSERT_TRUE(es.OnEpochEnd(epoch, {{"val_loss", val_loss[epoch]}}).ok());
    EXPECT_EQ(trainer.stop_training(), epoch == 3) << epoch;  // 2 epochs without improvement
  }
  EXPECT_EQ(es.stopped_epoch(), 3);
  EXPECT_EQ(es.best_epoch(), 1);
  EXPECT_EQ(es.best(), 0.5);
  ASSERT_TRUE(es.OnTrainEnd({}).ok());
  // verbose = 1 says it, in Keras' words (epochs counted from 1).
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "Epoch 4: early stopping\n"
            "Restoring model weights from the end of the best epoch: 2.\n");
  for (const auto& v : VariableValues(*model)) {
    for (float x : v) ASSERT_EQ(x, 1.0f);  // epoch 1's weights
  }
}

TEST(EarlyStoppingTest, MinDeltaAndMaxMode) {
  auto model = TinyModel(1);
  optimizers::Sgd sgd;
  fit::Trainer trainer(*model, sgd);
  EarlyStopping es({.monitor = "val_accuracy", .min_delta = 0.05, .patience = 1});
  es.set_trainer(&trainer);
  ASSERT_TRUE(es.OnTrainBegin({}).ok());
  ASSERT_TRUE(es.OnEpochEnd(0, {{"val_accuracy", 0.5}}).ok());
  ASSERT_TRUE(es.OnEpochEnd(1, {{"val_accuracy", 0.6}}).ok());  // +0.1: improvement
  EXPECT_FALSE(trainer.stop_training());
  ASSERT_TRUE(es.OnEpochEnd(2, {{"val_accuracy", 0.63}}).ok());  // +0.03 < min_delta
  EXPECT_TRUE(trainer.stop_training());
  EXPECT_EQ(es.best(), 0.6);
  // Without restore_best_weights the model is left as it is.
  Fill(*model, 7);
  ASSERT_TRUE(es.OnTrainEnd({}).ok());
  EXPECT_EQ(VariableValues(*model)[0][0], 7.0f);
}

TEST(EarlyStoppingTest, MissingMonitorIsAnError) {
  auto model = TinyModel(1);
  optimizers::Sgd sgd;
  fit::Trainer trainer(*model, sgd);
  EarlyStopping es({});  // val_loss, but no validation data
  absl::StatusOr<fit::History> h =
      trainer.Fit(BlobsDataset(20, 3, 10), {.epochs = 2, .callbacks = {&es}, .verbose = 0});
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("'val_loss' is not in the logs"), std::string::npos);
}

TEST(EarlyStoppingTest, StopsFitAndRestoresWeightsOfTheBestEpoch) {
  auto model = TinyModel(2);
  optimizers::Sgd sgd(optimizers::SgdOptions{.learning_rate = 0.1f});
  fit::Trainer trainer(*model, sgd);
  // min_delta so large that only the first epoch counts as an improvement.
  EarlyStopping es(
      {.monitor = "loss", .min_delta = 100, .patience = 2, .restore_best_weights = true});
  RecordingCallback rec;
  std::vector<std::vector<float>> after_epoch0;
  rec.on_epoch_end = [&](int64_t epoch, const Logs&) {
    if (epoch == 0) after_epoch0 = VariableValues(*model);
    return absl::OkStatus();
  };
  absl::StatusOr<fit::History> h =
      trainer.Fit(BlobsDataset(40, 3, 10), {.epochs = 10, .callbacks = {&rec, &es}, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_THAT(h->epochs, ElementsAre(0, 1, 2));  // stopped after 2 epochs of patience
  EXPECT_EQ(es.stopped_epoch(), 2);
  EXPECT_EQ(trainer.global_step(), 12);
  EXPECT_EQ(VariableValues(*model), after_epoch0);
}

}  // namespace
}  // namespace sluice::train::callbacks
