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
  RankPosition saved;
  ASSERT_TRUE(s->SaveState(saved).ok());
  EXPECT_EQ(saved.accumulated_steps, 0);
  // Accumulated gradients need accumulation over as many micro-batches to continue.
  saved.accumulated_steps = 1;
  saved.accumulation_steps = 4;
  const absl::Status refused = s->RestoreState(saved, "ckpt");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("ckpt: holds the gradients of 1 of 4 accumulated "
                                   "micro-batches: resume with accumulation_steps 4"),
            std::string::npos)
      << refused;
}

TEST_F(StepStrategyTest, AccumulationAppliesTheMeanOnceEveryNSteps) {
  std::unique_ptr<StepStrategy> s = MakeStepStrategy(sgd_, {.accumulation_steps = 2});
  EXPECT_EQ(s->BeginBackward(Vars()), nullptr);
  ASSERT_TRUE(s->ApplyGradients(Grad(1, 2), Vars()).ok());
  EXPECT_EQ(Value(), (std::vector<float>{10, 20}));  // held, not applied
  ASSERT_TRUE(s->ApplyGradients(Grad(3, 6), Vars()).ok());
  EXPECT_EQ(Value(), (std::vector<float>{8, 16}));  // minus the mean {2, 4}
  RankPosition after_update;
  ASSERT_TRUE(s->SaveState(after_update).ok());
  EXPECT_EQ(after_update.accumulated_steps, 0);  // nothing held
}

// A checkpoint in the middle of an accumulation keeps the partial sums by variable name; a fresh
// chain restored from it applies the same mean at the same step.
TEST_F(StepStrategyTest, AnAccumulationSavedMidwayContinuesWhereItWas) {
  std::unique_ptr<StepStrategy> s = MakeStepStrategy(sgd_, {.accumulation_steps = 3});
  ASSERT_TRUE(s->ApplyGradients(Grad(1, 2), Vars()).ok());
  ASSERT_TRUE(s->ApplyGradients(Grad(3, 6), Vars()).ok());
  RankPosition saved;
  ASSERT_TRUE(s->SaveState(saved).ok());
  EXPECT_EQ(saved.accumulated_steps, 2);
  EXPECT_EQ(saved.accumulation_steps, 3);
  ASSERT_EQ(saved.accumulated_gradients.size(), 1u);
  EXPECT_EQ(saved.accumulated_gradients[0].first, "w");
  EXPECT_TRUE(saved.accumulated_gradients[0].second.Equals(Tensor::FromVector<float>({4, 8})));

  // Another chain accumulating 2 cannot take it; one accumulating 3 can.
  EXPECT_EQ(MakeStepStrategy(sgd_, {.accumulation_steps = 2})->RestoreState(saved, "ckpt").code(),
            absl::StatusCode::kFailedPrecondition);
  std::unique_ptr<StepStrategy> resumed = MakeStepStrategy(sgd_, {.accumulation_steps = 3});
  ASSERT_TRUE(resumed->RestoreState(saved, "ckpt").ok());
  RankPosition saved_again;  // before any step took the sums: the same state
  ASSERT_TRUE(resumed->SaveState(saved_again).ok());
  EXPECT_EQ(saved_again.accumulated_steps, 2);
  ASSERT_TRUE(resumed->ApplyGradients(Grad(5, 10), Vars()).ok());
  EXPECT_EQ(Value(), (std::vector<float>{7, 14}));  // minus the mean {3, 6}

  // Sums of a variable the step does not train are refused at that step.
  saved.accumulated_gradients[0].first = "other";
  std::unique_ptr<StepStrategy> stray = MakeStepStrategy(sgd_, {.accumulation_steps = 3});
  ASSERT_TRUE(stray->RestoreState(saved, "ckpt").ok());
  const absl::Status s2 = stray->ApplyGradients(Grad(1, 1), Vars());
  EXPECT_EQ(s2.code(), absl::StatusCode::kDataLoss) << s2;
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
