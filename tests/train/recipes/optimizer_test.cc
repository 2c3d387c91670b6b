#include "train/recipes/optimizer.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/train/gradient_check.h"
#include "train/autodiff/variable.h"
#include "train/optimizers/adadelta.h"
#include "train/optimizers/adagrad.h"
#include "train/optimizers/adam.h"
#include "train/optimizers/adamax.h"
#include "train/optimizers/adamw.h"
#include "train/optimizers/nadam.h"
#include "train/optimizers/rmsprop.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::recipes {
namespace {

using ::sluice::train::testing::T;
using ::testing::HasSubstr;

// w after one step with a zero gradient: only the weight decay moves it.
float DecayedOnce(optimizers::Optimizer& optimizer) {
  autodiff::Variable w(T({1}, {1}));
  EXPECT_TRUE(optimizer.Apply({T({0}, {1})}, {&w}).ok());
  return w.value().data<float>()[0];
}

TEST(OptimizerRecipeTest, NamesMakeKerasOptimizersWithTheirDefaults) {
  auto sgd = MakeOptimizer({.name = "sgd"});
  ASSERT_TRUE(sgd.ok()) << sgd.status();
  EXPECT_NE(dynamic_cast<optimizers::Sgd*>(sgd->get()), nullptr);
  EXPECT_FLOAT_EQ((*sgd)->learning_rate(), 0.01f);
  EXPECT_FLOAT_EQ(DecayedOnce(**sgd), 1);

  auto adam = MakeOptimizer({});
  ASSERT_TRUE(adam.ok()) << adam.status();
  EXPECT_NE(dynamic_cast<optimizers::Adam*>(adam->get()), nullptr);
  EXPECT_EQ(dynamic_cast<optimizers::AdamW*>(adam->get()), nullptr);
  EXPECT_FLOAT_EQ((*adam)->learning_rate(), 0.001f);

  auto adamw = MakeOptimizer({.name = "adamw", .learning_rate = 0.5});
  ASSERT_TRUE(adamw.ok()) << adamw.status();
  EXPECT_NE(dynamic_cast<optimizers::AdamW*>(adamw->get()), nullptr);
  EXPECT_FLOAT_EQ((*adamw)->learning_rate(), 0.5f);
  EXPECT_FLOAT_EQ(DecayedOnce(**adamw), 1 - 0.5f * 0.004f);  // AdamW's default decay
}

// The TF2 guide's optimizers, by their Keras names, with the learning rate 0.001 TF2 gave them.
TEST(OptimizerRecipeTest, NamesMakeTheOtherKerasOptimizersWithTheirDefaults) {
  auto is = [](const std::string& name, optimizers::Optimizer& optimizer) {
    if (name == "rmsprop") return dynamic_cast<optimizers::Rmsprop*>(&optimizer) != nullptr;
    if (name == "adagrad") return dynamic_cast<optimizers::Adagrad*>(&optimizer) != nullptr;
    if (name == "adadelta") return dynamic_cast<optimizers::Adadelta*>(&optimizer) != nullptr;
    if (name == "adamax") return dynamic_cast<optimizers::Adamax*>(&optimizer) != nullptr;
    return dynamic_cast<optimizers::Nadam*>(&optimizer) != nullptr;
  };
  for (const std::string name : {"rmsprop", "adagrad", "adadelta", "adamax", "nadam"}) {
    SCOPED_TRACE(name);
    auto plain = MakeOptimizer({.name = name});
    ASSERT_TRUE(plain.ok()) << plain.status();
    EXPECT_TRUE(is(name, **plain));
    EXPECT_FLOAT_EQ((*plain)->learning_rate(), 0.001f);
    EXPECT_FLOAT_EQ(DecayedOnce(**plain), 1);
    auto decayed = MakeOptimizer({.name = name, .learning_rate = 0.1, .weight_decay = 2});
    ASSERT_TRUE(decayed.ok()) << decayed.status();
    EXPECT_FLOAT_EQ((*decayed)->learning_rate(), 0.1f);
    EXPECT_FLOAT_EQ(DecayedOnce(**decayed), 1 - 0.1f * 2);
  }
}

TEST(OptimizerRecipeTest, MomentumReachesRmspropAndOnlyOptimizersWithMomentumTakeIt) {
  auto rmsprop = MakeOptimizer({.name = "rmsprop", .momentum = 0.9});
  ASSERT_TRUE(rmsprop.ok()) << rmsprop.status();
  autodiff::Variable w(T({1}, {1}));
  ASSERT_TRUE((*rmsprop)->Apply({T({1}, {1})}, {&w}).ok());
  optimizers::OptimizerState state = *(*rmsprop)->SaveState({&w});
  ASSERT_EQ(state.slots.size(), 2u);
  EXPECT_EQ(state.slots[1].first, "momentum/0");
  for (const std::string name : {"adam", "adamw", "adagrad", "adadelta", "adamax", "nadam"}) {
    absl::Status refused = CheckOptimizerOptions({.name = name, .momentum = 0.9});
    EXPECT_TRUE(absl::IsInvalidArgument(refused)) << name;
    EXPECT_THAT(refused.message(), HasSubstr(absl::StrCat("optimizer ", name, " has no momentum")));
  }
  EXPECT_THAT(CheckOptimizerOptions({.name = "sgd", .momentum = 1.5}).message(),
              HasSubstr("momentum must lie in [0, 1], not 1.5"));
}

TEST(OptimizerRecipeTest, WeightDecayMomentumAndClippingReachTheOptimizer) {
  auto decayed = MakeOptimizer({.name = "sgd", .learning_rate = 0.1, .weight_decay = 2});
  ASSERT_TRUE(decayed.ok()) << decayed.status();
  EXPECT_FLOAT_EQ(DecayedOnce(**decayed), 1 - 0.1f * 2);

  // Gradient (30, 40) has norm 50, clipped to 5: (3, 4). With momentum 0.5, the second step of
  // the same gradient moves 1.5 times as far.
  auto sgd = MakeOptimizer({.name = "sgd", .learning_rate = 1, .momentum = 0.5, .clip_norm = 5});
  ASSERT_TRUE(sgd.ok()) << sgd.status();
  autodiff::Variable w(T({0, 0}, {2}));
  ASSERT_TRUE((*sgd)->Apply({T({30, 40}, {2})}, {&w}).ok());
  EXPECT_FLOAT_EQ(w.value().data<float>()[0], -3);
  EXPECT_FLOAT_EQ(w.value().data<float>()[1], -4);
  ASSERT_TRUE((*sgd)->Apply({T({30, 40}, {2})}, {&w}).ok());
  EXPECT_FLOAT_EQ(w.value().data<float>()[0], -3 - 4.5f);
}

TEST(OptimizerRecipeTest, TheScheduleStartsFromTheLearningRate) {
  auto warm = MakeOptimizer(
      {.name = "sgd", .learning_rate = 0.4, .schedule = {.total_steps = 10, .warmup_steps = 4}});
  ASSERT_TRUE(warm.ok()) << warm.status();
  EXPECT_FLOAT_EQ((*warm)->learning_rate(), 0);
  autodiff::Variable w(T({0}, {1}));
  ASSERT_TRUE((*warm)->Apply({T({1}, {1})}, {&w}).ok());
  EXPECT_FLOAT_EQ((*warm)->learning_rate(), 0.1f);
}

TEST(OptimizerRecipeTest, UnknownNamesAreRefusedBeforeAnythingIsMade) {
  auto unknown = MakeOptimizer({.name = "lamb"});
  EXPECT_TRUE(absl::IsInvalidArgument(unknown.status()));
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("optimizer takes sgd, adam, adamw, rmsprop, adagrad, adadelta, adamax, "
                        "nadam, not 'lamb'"));
  EXPECT_TRUE(absl::IsInvalidArgument(CheckOptimizerOptions({.name = "lamb"})));
  absl::Status schedule = CheckOptimizerOptions({.schedule = {.name = "exponential"}});
  EXPECT_THAT(schedule.message(), HasSubstr("not 'exponential'"));
  EXPECT_TRUE(CheckOptimizerOptions({.name = "adamw", .schedule = {.name = "step"}}).ok());
}

}  // namespace
}  // namespace sluice::train::recipes
