// Dynamic loss scaling (Keras' LossScaleOptimizer): exact unscaling, skipped steps on overflow,
// the scale's halving and growth.
#include "train/optimizers/dynamic_loss_scale.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

namespace sluice::train::optimizers {
namespace {

TEST(DynamicLossScaleTest, OptionsAreChecked) {
  EXPECT_FALSE(DynamicLossScale::Create({.initial_scale = 1000}).ok());  // not a power of two
  EXPECT_FALSE(DynamicLossScale::Create({.initial_scale = 0.5f}).ok());
  EXPECT_FALSE(DynamicLossScale::Create({.growth_steps = 0}).ok());
  absl::StatusOr<DynamicLossScale> keras = DynamicLossScale::Create();
  ASSERT_TRUE(keras.ok());
  EXPECT_EQ(keras->scale(), 32768.0f);
}

TEST(DynamicLossScaleTest, UnscalesExactlyAndGrowsAfterCleanSteps) {
  absl::StatusOr<DynamicLossScale> ls =
      DynamicLossScale::Create({.initial_scale = 1024, .growth_steps = 3});
  ASSERT_TRUE(ls.ok());
  for (int step = 0; step < 3; ++step) {
    std::vector<std::optional<Tensor>> grads = {
        Tensor::FromVector<float>({0.1f * 1024, -3.0f * 1024}), std::nullopt};
    absl::StatusOr<bool> finite = ls->UnscaleAndUpdate(grads);
    ASSERT_TRUE(finite.ok()) << finite.status();
    EXPECT_TRUE(*finite);
    EXPECT_EQ(grads[0]->data<float>()[0], 0.1f * 1024 / 1024);  // exact: a power of two
    EXPECT_EQ(grads[0]->data<float>()[1], -3.0f);
    EXPECT_FALSE(grads[1].has_value());
    EXPECT_EQ(ls->scale(), step < 2 ? 1024.0f : 2048.0f) << step;
  }
  EXPECT_EQ(ls->skipped_steps(), 0);
}

TEST(DynamicLossScaleTest, AnOverflowHalvesTheScaleAndRestartsTheCount) {
  absl::StatusOr<DynamicLossScale> ls =
      DynamicLossScale::Create({.initial_scale = 64, .growth_steps = 2});
  ASSERT_TRUE(ls.ok());
  std::vector<std::optional<Tensor>> clean = {Tensor::FromVector<float>({1})};
  ASSERT_TRUE(*ls->UnscaleAndUpdate(clean));  // one clean step of two
  for (float bad : {std::numeric_limits<float>::infinity(), std::nanf(""), 3e38f}) {
    std::vector<std::optional<Tensor>> grads = {Tensor::FromVector<float>({1, bad})};
    absl::StatusOr<bool> finite = ls->UnscaleAndUpdate(grads);
    ASSERT_TRUE(finite.ok());
    EXPECT_FALSE(*finite) << bad;
  }
  EXPECT_EQ(ls->scale(), 8.0f);  // 64 halved three times
  EXPECT_EQ(ls->skipped_steps(), 3);
  // The clean step before the overflows no longer counts: two more are needed to grow.
  clean = {Tensor::FromVector<float>({1})};
  ASSERT_TRUE(*ls->UnscaleAndUpdate(clean));
  EXPECT_EQ(ls->scale(), 8.0f);
  clean = {Tensor::FromVector<float>({1})};
  ASSERT_TRUE(*ls->UnscaleAndUpdate(clean));
  EXPECT_EQ(ls->scale(), 16.0f);
}

}  // namespace
}  // namespace sluice::train::optimizers
