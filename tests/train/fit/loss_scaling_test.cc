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

TEST(LossScalingTest, GradientAccumulationIsRefusedWithAReason) {
  Outcome run =
      TrainWithLossScale(optimizers::DynamicLossScaleOptions{}, 1, /*accumulation_steps=*/2);
  EXPECT_EQ(run.history.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(run.history.status().message().find("gradient accumulation"), std::string::npos);
}

}  // namespace
}  // namespace sluice::train::testing
