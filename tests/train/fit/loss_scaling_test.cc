// Fit with dynamic loss scaling (TrainerOptions::loss_scale), on the CPU in float32: scaling by
// powers of two is exact, so a run without overflow equals the unscaled run bit for bit, and an
// overflowing step is skipped without touching any variable.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "tests/train/fit_test_util.h"
#include "train/autodiff/variable.h"
#include "train/fit/trainer.h"
#include "train/fit/training_checkpoint.h"
#include "train/optimizers/adam.h"

namespace sluice::train::testing {
namespace {

std::vector<std::pair<std::string, Tensor>> Snapshot(layers::Module& model) {
  absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> s =
      autodiff::SnapshotVariables(model.Variables());
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : std::vector<std::pair<std::string, Tensor>>{};
}

void ExpectSameVariables(const std::vector<std::pair<std::string, Tensor>>& a,
                         const std::vector<std::pair<std::string, Tensor>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i].second.Equals(b[i].second)) << a[i].first;
  }
}

struct Outcome {
  absl::StatusOr<fit::History> history;
  std::vector<std::pair<std::string, Tensor>> before, after;
};

Outcome TrainWithLossScale(std::optional<optimizers::DynamicLossScaleOptions> loss_scale,
                           int64_t epochs = 2, int accumulation_steps = 1) {
  Outcome run;
  auto model = TinyModel(8);
  optimizers::Adam adam;
  fit::Trainer trainer(*model, adam, {.loss_scale = loss_scale});
  run.before = Snapshot(*model);
  run.history =
      trainer.Fit(BlobsDataset(96, 3, 16),
                  {.epochs = epochs, .accumulation_steps = accumulation_steps, .verbose = 0});
  run.after = Snapshot(*model);
  return run;
}

TEST(LossScalingTest, WithoutOverflowItEqualsUnscaledTrainingBitForBit) {
  Outcome plain = TrainWithLossScale(std::nullopt);
  Outcome scaled = TrainWithLossScale(optimizers::DynamicLossScaleOptions{.initial_scale = 1024});
  ASSERT_TRUE(plain.history.ok() && scaled.history.ok()) << scaled.history.status();
  EXPECT_EQ(plain.history->at("loss"), scaled.history->at("loss"));
  EXPECT_EQ(plain.history->at("accuracy"), scaled.history->at("accuracy"));
  ExpectSameVariables(plain.after, scaled.after);
  EXPECT_EQ(plain.history->history.count("loss_scale"), 0u);
  EXPECT_EQ(scaled.history->at("loss_scale").back(), 1024.0);  // 12 steps < 2000: no growth
}

TEST(LossScalingTest, AnOverflowingStepChangesNoVariableAndHalvesTheScale) {
  // Inputs of 1e36: the scaled gradients of the last layer's weights (activations times
  // 2^15 / 16) pass float32's range, though the unscaled ones would not.
  Element data = Blobs(16, 3);
  for (float& v : data[0].flat<float>()) v *= 1e36f;
  auto model = TinyModel(8);
  optimizers::Adam adam;
  fit::Trainer trainer(*model, adam, {.loss_scale = optimizers::DynamicLossScaleOptions{}});
  const auto before = Snapshot(*model);
  absl::StatusOr<fit::History> h =
      trainer.Fit(Dataset::FromTensorSlices(data).Batch(16), {.epochs = 1, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  ExpectSameVariables(before, Snapshot(*model));
  EXPECT_EQ(h->at("loss_scale").back(), 16384.0);  // 2^15 halved
  EXPECT_EQ(adam.iterations(), 0);                 // the optimizer never ran
}

TEST(LossScalingTest, TheScaleGrowsAfterCleanSteps) {
  Outcome run = TrainWithLossScale(
      optimizers::DynamicLossScaleOptions{.initial_scale = 16, .growth_steps = 2},
      /*epochs=*/1);
  ASSERT_TRUE(run.history.ok()) << run.history.status();
  EXPECT_EQ(run.history->at("loss_scale").back(), 128.0);  // 6 clean steps: 3 doublings
}

// The scale, its run of finite steps and the skipped steps are in the checkpoint: resumed
// after one epoch of 6 steps (growth every 5: 16 -> 32, one finite step since), the second
// epoch doubles again at its 4th step, as the uninterrupted run does. A fresh scale (16, none)
// would reach 32 only.
TEST(LossScalingTest, ACheckpointResumesTheScaleWhereItWas) {
  const optimizers::DynamicLossScaleOptions options{.initial_scale = 16, .growth_steps = 5};
  Outcome whole = TrainWithLossScale(options, /*epochs=*/2);
  ASSERT_TRUE(whole.history.ok()) << whole.history.status();
  ASSERT_EQ(whole.history->at("loss_scale").back(), 64.0);

  const std::string path = ::testing::TempDir() + "/loss_scale_resume.ckpt";
  {
    auto model = TinyModel(8);
    optimizers::Adam adam;
    fit::Trainer first(*model, adam, {.loss_scale = options});
    ASSERT_TRUE(first.Fit(BlobsDataset(96, 3, 16), {.epochs = 1, .verbose = 0}).ok());
    ASSERT_TRUE(first.SaveCheckpoint(path).ok());
  }
  absl::StatusOr<fit::TrainingCheckpoint> saved = fit::ReadCheckpoint(path);
  ASSERT_TRUE(saved.ok()) << saved.status();
  ASSERT_TRUE(saved->loss_scale.has_value());
  EXPECT_EQ(saved->loss_scale->scale, 32.0f);
  EXPECT_EQ(saved->loss_scale->finite_steps, 1);
  EXPECT_EQ(saved->loss_scale->skipped_steps, 0);

  auto model = TinyModel(8);
  optimizers::Adam adam;
  fit::Trainer resumed(*model, adam, {.loss_scale = options});
  ASSERT_TRUE(resumed.LoadCheckpoint(path).ok());
  absl::StatusOr<fit::History> rest =
      resumed.Fit(BlobsDataset(96, 3, 16), {.epochs = 2, .verbose = 0});
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->at("loss_scale").back(), 64.0);
  ExpectSameVariables(whole.after, Snapshot(*model));
}

TEST(LossScalingTest, ASavedStateOutsideItsRangeIsDataLoss) {
  absl::StatusOr<optimizers::DynamicLossScale> scale =
      optimizers::DynamicLossScale::Create({.initial_scale = 16, .growth_steps = 5});
  ASSERT_TRUE(scale.ok());
  for (const optimizers::DynamicLossScale::State& bad :
       {optimizers::DynamicLossScale::State{.scale = 3},
        optimizers::DynamicLossScale::State{.scale = 0.5f},
        optimizers::DynamicLossScale::State{.scale = INFINITY},
        optimizers::DynamicLossScale::State{.scale = 8, .finite_steps = 5},
        optimizers::DynamicLossScale::State{.scale = 8, .finite_steps = -1},
        optimizers::DynamicLossScale::State{.scale = 8, .skipped_steps = -2}}) {
    EXPECT_EQ(scale->Restore(bad).code(), absl::StatusCode::kDataLoss) << bad.scale;
  }
  EXPECT_EQ(scale->scale(), 16.0f);  // unchanged by the refusals
  ASSERT_TRUE(scale->Restore({.scale = 8, .finite_steps = 4, .skipped_steps = 2}).ok());
  EXPECT_EQ(scale->scale(), 8.0f);
  EXPECT_EQ(scale->skipped_steps(), 2);
}

TEST(LossScalingTest, GradientAccumulationIsRefusedWithAReason) {
  Outcome run =
      TrainWithLossScale(optimizers::DynamicLossScaleOptions{}, 1, /*accumulation_steps=*/2);
  EXPECT_EQ(run.history.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(run.history.status().message().find("gradient accumulation"), std::string::npos);
}

}  // namespace
}  // namespace sluice::train::testing
