// Adagrad (train/optimizers/adagrad.h) against Keras' update rule written out in float64.
#include "train/optimizers/adagrad.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "tests/train/optimizers/rule_check.h"

namespace sluice::train::optimizers {
namespace {

using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using testing::ExpectExactResume;
using testing::ExpectFollowsRule;
using ::testing::FloatEq;

TEST(AdagradTest, DefaultsAreKeras) {
  const AdagradOptions options;
  EXPECT_FLOAT_EQ(options.learning_rate, 0.001f);
  EXPECT_FLOAT_EQ(options.initial_accumulator_value, 0.1f);
  EXPECT_FLOAT_EQ(options.epsilon, 1e-7f);
  EXPECT_FLOAT_EQ(options.weight_decay, 0.0f);
  EXPECT_FLOAT_EQ(Adagrad(0.25f).learning_rate(), 0.25f);
}

// keras/src/optimizers/adagrad.py, update_step; the weight decay first. state: accumulator.
void KerasAdagrad(const AdagradOptions& o, double g, double& w, std::vector<double>& state) {
  const double lr = o.learning_rate;
  w -= w * o.weight_decay * lr;
  state[0] += g * g;
  w -= lr * g / std::sqrt(state[0] + o.epsilon);
}

TEST(AdagradTest, FollowsKerasRuleFor20Steps) {
  const AdagradOptions plain{.learning_rate = 0.1f};
  Adagrad adagrad(plain);
  ExpectFollowsRule(adagrad,
                    [&](int64_t, double g, double& w, auto& s) { KerasAdagrad(plain, g, w, s); },
                    {.initial_state = {0.1}, .slot_names = {"accumulator"}});
  const AdagradOptions other{.learning_rate = 0.05f,
                             .initial_accumulator_value = 0.5f,
                             .epsilon = 0.05f,
                             .weight_decay = 0.1f};
  Adagrad custom(other);
  ExpectFollowsRule(custom,
                    [&](int64_t, double g, double& w, auto& s) { KerasAdagrad(other, g, w, s); },
                    {.initial_state = {0.5}, .slot_names = {"accumulator"}});
}

TEST(AdagradTest, AccumulatorStartsAtItsInitialValueAlsoWhenRestored) {
  Adagrad adagrad({.initial_accumulator_value = 0.25f});
  autodiff::Variable a(T({1}, {1})), b(T({1, 2}, {2}));
  ASSERT_TRUE(adagrad.Apply({T({0.5f}, {1}), std::nullopt}, {&a, &b}).ok());
  OptimizerState state = *adagrad.SaveState({&a, &b});
  ASSERT_EQ(state.slots.size(), 1u);  // `b` had no gradient yet
  EXPECT_EQ(state.slots[0].first, "accumulator/0");
  EXPECT_THAT(Values(state.slots[0].second), ElementsAre(FloatEq(0.25f + 0.25f)));
  // Restored, `b`'s accumulator starts at 0.25 on its first gradient, as it would have.
  Adagrad resumed({.initial_accumulator_value = 0.25f});
  ASSERT_TRUE(resumed.RestoreState(state, {&a, &b}).ok());
  ASSERT_TRUE(resumed.Apply({std::nullopt, T({1, 1}, {2})}, {&a, &b}).ok());
  EXPECT_THAT(Values(resumed.SaveState({&a, &b})->slots[1].second),
              ElementsAre(FloatEq(1.25f), FloatEq(1.25f)));
}

TEST(AdagradTest, ANegativeInitialAccumulatorIsRefused) {
  Adagrad adagrad({.initial_accumulator_value = -0.5f});
  autodiff::Variable w(T({1}, {1}));
  absl::Status s = adagrad.Apply({T({0.5f}, {1})}, {&w});
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), ::testing::HasSubstr("initial_accumulator_value must be >= 0"));
  EXPECT_THAT(Values(w.value()), ElementsAre(1));
}

TEST(AdagradTest, ResumesExactlyFromASavedState) {
  ExpectExactResume([] {
    return std::make_unique<Adagrad>(AdagradOptions{.learning_rate = 0.1f, .weight_decay = 0.01f});
  });
}

}  // namespace
}  // namespace sluice::train::optimizers
