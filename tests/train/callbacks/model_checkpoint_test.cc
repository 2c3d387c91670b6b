// ModelCheckpoint (train/model_checkpoint.h): every epoch, best only, every N steps.
#include "train/callbacks/model_checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tests/train/fit_test_util.h"
#include "train/fit/training_checkpoint.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::callbacks {
namespace {

using ::sluice::train::testing::BlobsDataset;
using ::sluice::train::testing::Fill;
using ::sluice::train::testing::TinyModel;
using ::sluice::train::testing::Values;

std::string CheckpointDir(const std::string& name) {
  std::string dir =
      ::testing::TempDir() + "/model_checkpoint_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ModelCheckpointTest, BestOnlyWritesOnlyOnImprovement) {
  const std::string dir = CheckpointDir("best");
  auto model = TinyModel(1);
  optimizers::Sgd sgd;
  fit::Trainer trainer(*model, sgd);
  ModelCheckpoint cb(
      {.path = dir + "/ckpt-{epoch}", .monitor = "val_loss", .save_best_only = true});
  cb.set_trainer(&trainer);
  ASSERT_TRUE(cb.OnTrainBegin({}).ok());
  const std::vector<double> val_loss = {1.0, 1.2, 0.8, 0.8};
  for (int epoch = 0; epoch < 4; ++epoch) {
    Fill(*model, static_cast<float>(epoch));
    ASSERT_TRUE(cb.OnEpochEnd(epoch, {{"val_loss", val_loss[epoch]}, {"loss", 0}}).ok());
  }
  EXPECT_EQ(cb.saves(), 2);
  EXPECT_TRUE(std::filesystem::exists(dir + "/ckpt-1"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/ckpt-2"));  // worse
  EXPECT_TRUE(std::filesystem::exists(dir + "/ckpt-3"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/ckpt-4"));  // equal is no improvement
  EXPECT_EQ(cb.last_path(), dir + "/ckpt-3");
  // The file holds epoch 2's weights (all 2.0).
  absl::StatusOr<fit::TrainingCheckpoint> c = fit::ReadCheckpoint(dir + "/ckpt-3");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->variables.size(), 4u);
  for (float x : Values(c->variables[0].second)) ASSERT_EQ(x, 2.0f);
  std::filesystem::remove_all(dir);
}

TEST(ModelCheckpointTest, MaxModeForAccuracy) {
  const std::string dir = CheckpointDir("max");
  auto model = TinyModel(1);
  optimizers::Sgd sgd;
  fit::Trainer trainer(*model, sgd);
  ModelCheckpoint cb({.path = dir + "/ckpt", .monitor = "val_accuracy", .save_best_only = true});
  cb.set_trainer(&trainer);
  ASSERT_TRUE(cb.OnTrainBegin({}).ok());
  for (double acc : {0.5, 0.4, 0.6, 0.55}) {
    ASSERT_TRUE(cb.OnEpochEnd(0, {{"val_accuracy", acc}}).ok());
  }
  EXPECT_EQ(cb.saves(), 2);
  EXPECT_EQ(cb.best(), 0.6);
  std::filesystem::remove_all(dir);
}

TEST(ModelCheckpointTest, EveryEpochAndEveryNStepsInFit) {
  const std::string dir = CheckpointDir("fit");
  auto model = TinyModel(2);
  optimizers::Sgd sgd;
  fit::Trainer trainer(*model, sgd);
  ModelCheckpoint per_epoch({.path = dir + "/epoch-{epoch}"});
  ModelCheckpoint per_steps({.path = dir + "/steps", .save_freq = 3});
  ASSERT_TRUE(trainer
                  .Fit(BlobsDataset(40, 3, 10),
                       {.epochs = 2, .callbacks = {&per_epoch, &per_steps}, .verbose = 0})
                  .ok());
  EXPECT_EQ(per_epoch.saves(), 2);
  EXPECT_TRUE(std::filesystem::exists(dir + "/epoch-1"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/epoch-2"));
  EXPECT_EQ(per_steps.saves(), 2);  // global steps 3 and 6 of 8
  absl::StatusOr<fit::TrainingCheckpoint> c = fit::ReadCheckpoint(dir + "/steps");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->global_step, 6);
  EXPECT_EQ(c->epoch, 1);
  EXPECT_EQ(c->step_in_epoch, 2);
  EXPECT_TRUE(c->iterator_state.has_value());
  absl::StatusOr<fit::TrainingCheckpoint> e2 = fit::ReadCheckpoint(dir + "/epoch-2");
  EXPECT_EQ(e2->epoch, 2);  // saved after epoch 2 ended: resumes at the next one
  EXPECT_EQ(e2->step_in_epoch, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::train::callbacks
