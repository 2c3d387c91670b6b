// The step strategies (train/fit/step_strategy.h) one by one and composed by MakeStepStrategy,
// on a variable whose updates are easy to compute by hand: SGD with learning rate 1 subtracts
// the gradient it is given.
#include "train/fit/step_strategy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "train/fit/gradient_accumulation_strategy.h"
#include "train/fit/loss_scale_strategy.h"
#include "train/optimizers/dynamic_loss_scale.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::fit {
namespace {

using Grads = std::vector<std::optional<Tensor>>;

Grads Grad(float a, float b) { return {Tensor::FromVector<float>({a, b})}; }

class StepStrategyTest : public ::testing::Test {
 protected:
  std::vector<float> Value() const {
    auto v = var_.value().flat<float>();
    return {v.begin(), v.end()};
  }
  std::vector<autodiff::Variable*> Vars() { return {&var_}; }

  autodiff::Variable var_{Tensor::FromVector<float>({10, 20}), "w"};
  optimizers::Sgd sgd_{{.learning_rate = 1.0f}};
};

TEST_F(StepStrategyTest, LocalAppliesEachStepAndScalesNothing) {
  std::unique_ptr<StepStrategy> s = MakeStepStrategy(sgd_, {});
  EXPECT_EQ(s->LossFactor(), 1.0f);
  EXPECT_EQ(s->BeginBackward(Vars()), nullptr);
  ASSERT_TRUE(s->ApplyGradients(Grad(1, 2), Vars()).ok());
  EXPECT_EQ(Value(), (std::vector<float>{9, 18}));
  callbacks::Logs logs;
  s->AddLogs(logs);
  EXPECT_TRUE(logs.empty());
  EXPECT_TRUE(s->CheckCanSave("ckpt", 1).ok());
}

TEST_F(StepStrategyTest, AccumulationAppliesTheMeanOnceEveryNSteps) {
  std::unique_ptr<StepStrategy> s = MakeStepStrategy(sgd_, {.accumulation_steps = 2});
  EXPECT_EQ(s->BeginBackward(Vars()), nullptr);
  ASSERT_TRUE(s->ApplyGradients(Grad(1, 2), Vars()).ok());
  EXPECT_EQ(Value(), (std::vector<float>{10, 20}));  // held, not applied
  const absl::Status mid = s->CheckCanSave("ckpt", 7);
  EXPECT_EQ(mid.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(mid.message().find("ckpt: cannot checkpoint at step 7: 1 of 2"), std::string::npos)
      << mid;
  ASSERT_TRUE(s->ApplyGradients(Grad(3, 6), Vars()).ok());
  EXPECT_EQ(Value(), (std::vector<float>{8, 16}));  // minus the mean {2, 4}
  EXPECT_TRUE(s->CheckCanSave("ckpt", 8).ok());
}

TEST_F(StepStrategyTest, LossScalingMultipliesTheLossAndUnscalesTheGradients) {
  absl::StatusOr<optimizers::DynamicLossScale> scale =
      optimizers::DynamicLossScale::Create({.initial_scale = 8});
  ASSERT_TRUE(scale.ok()) << scale.status();
  std::unique_ptr<StepStrategy> s = MakeStepStrategy(sgd_, {.loss_scale = &*scale});
  EXPECT_EQ(s->LossFactor(), 8.0f);
  ASSERT_TRUE(s->ApplyGradients(Grad(8, 16), Vars()).ok());  // the gradients of 8 x loss
  EXPECT_EQ(Value(), (std::vector<float>{9, 18}));
  callbacks::Logs logs;
  s->AddLogs(logs);
  EXPECT_EQ(logs.at("loss_scale"), 8.0);
}

TEST_F(StepStrategyTest, LossScalingSkipsAnOverflowingStepAndHalvesTheScale) {
  absl::StatusOr<optimizers::DynamicLossScale> scale =
      optimizers::DynamicLossScale::Create({.initial_scale = 8});
  ASSERT_TRUE(scale.ok()) << scale.status();
  std::unique_ptr<StepStrategy> s = MakeStepStrategy(sgd_, {.loss_scale = &*scale});
  ASSERT_TRUE(s->ApplyGradients(Grad(std::numeric_limits<float>::infinity(), 1), Vars()).ok());
  EXPECT_EQ(Value(), (std::vector<float>{10, 20}));
  EXPECT_EQ(sgd_.iterations(), 0);
  EXPECT_EQ(s->LossFactor(), 4.0f);
}

// What the built-in step does: the factor on the loss, the hook, then the update; a strategy
// that wraps another passes on what it does not change.
TEST_F(StepStrategyTest, AWrappingStrategyPassesOnWhatItDoesNotChange) {
  absl::StatusOr<optimizers::DynamicLossScale> scale =
      optimizers::DynamicLossScale::Create({.initial_scale = 4});
  ASSERT_TRUE(scale.ok()) << scale.status();
  GradientAccumulationStrategy s(
      3, std::make_unique<LossScaleStrategy>(*scale, std::make_unique<LocalStrategy>(sgd_)));
  EXPECT_EQ(s.LossFactor(), 4.0f);
  callbacks::Logs logs;
  s.AddLogs(logs);
  EXPECT_EQ(logs.at("loss_scale"), 4.0);
}

}  // namespace
}  // namespace sluice::train::fit
