// Nadam (train/optimizers/nadam.h) against Keras' update rule written out in float64, and its
// momentum-schedule product saved and restored with the state.
#include "train/optimizers/nadam.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "tests/train/optimizers/rule_check.h"
#include "train/optimizers/adam.h"

namespace sluice::train::optimizers {
namespace {

using ::sluice::train::testing::T;
using testing::ExpectExactResume;
using testing::ExpectFollowsRule;
using ::testing::HasSubstr;

TEST(NadamTest, DefaultsAreKeras) {
  const NadamOptions options;
  EXPECT_FLOAT_EQ(options.learning_rate, 0.001f);
  EXPECT_FLOAT_EQ(options.beta_1, 0.9f);
  EXPECT_FLOAT_EQ(options.beta_2, 0.999f);
  EXPECT_FLOAT_EQ(options.epsilon, 1e-7f);
  EXPECT_FLOAT_EQ(options.weight_decay, 0.0f);
  EXPECT_FLOAT_EQ(Nadam(0.25f).learning_rate(), 0.25f);
}

// u_t of keras/src/optimizers/nadam.py.
double U(const NadamOptions& o, int64_t t) {
  return o.beta_1 * (1 - 0.5 * std::pow(0.96, static_cast<double>(t)));
}

// keras/src/optimizers/nadam.py, _backend_update_step and update_step; the weight decay first.
// The u_product is recomputed here from scratch: u_1 ... u_t. state: momentum (m), velocity (v).
void KerasNadam(const NadamOptions& o, int64_t t, double g, double& w, std::vector<double>& state) {
  const double lr = o.learning_rate, beta_1 = o.beta_1, beta_2 = o.beta_2;
  w -= w * o.weight_decay * lr;
  double u_product_t = 1;
  for (int64_t i = 1; i <= t; ++i) u_product_t *= U(o, i);
  const double u_t = U(o, t), u_t_1 = U(o, t + 1);
  const double u_product_t_1 = u_product_t * u_t_1;
  const double beta_2_power = std::pow(beta_2, static_cast<double>(t));
  double& m = state[0];
  double& v = state[1];
  m += (g - m) * (1 - beta_1);
  v += (g * g - v) * (1 - beta_2);
  const double m_hat = u_t_1 * m / (1 - u_product_t_1) + (1 - u_t) * g / (1 - u_product_t);
  const double v_hat = v / (1 - beta_2_power);
  w -= m_hat * lr / (std::sqrt(v_hat) + o.epsilon);
}

TEST(NadamTest, FollowsKerasRuleFor20Steps) {
  const NadamOptions plain{.learning_rate = 0.01f};
  Nadam nadam(plain);
  ExpectFollowsRule(nadam,
                    [&](int64_t t, double g, double& w, auto& s) { KerasNadam(plain, t, g, w, s); },
                    {.initial_state = {0, 0}, .slot_names = {"momentum", "velocity"}});
  double product = 1;
  for (int t = 1; t <= 20; ++t) product *= U(plain, t);
  EXPECT_NEAR(nadam.u_product(), product, 1e-15);

  const NadamOptions other{.learning_rate = 0.02f,
                           .beta_1 = 0.8f,
                           .beta_2 = 0.99f,
                           .epsilon = 0.05f,
                           .weight_decay = 0.1f};
  Nadam custom(other);
  ExpectFollowsRule(custom,
                    [&](int64_t t, double g, double& w, auto& s) { KerasNadam(other, t, g, w, s); },
                    {.initial_state = {0, 0}, .slot_names = {"momentum", "velocity"}});
}

TEST(NadamTest, ResumesExactlyFromASavedState) {
  ExpectExactResume([] {
    return std::make_unique<Nadam>(NadamOptions{.learning_rate = 0.01f, .weight_decay = 0.01f});
  });
}

TEST(NadamTest, TheUProductIsPartOfTheState) {
  Nadam nadam;
  autodiff::Variable w(T({1}, {1}));
  OptimizerState fresh = *nadam.SaveState({&w});
  ASSERT_EQ(fresh.scalars.size(), 1u);
  EXPECT_EQ(fresh.scalars[0].first, "u_product");
  EXPECT_EQ(fresh.scalars[0].second, 1.0);
  ASSERT_TRUE(nadam.Apply({T({0.5f}, {1})}, {&w}).ok());
  ASSERT_TRUE(nadam.Apply({T({0.5f}, {1})}, {&w}).ok());
  OptimizerState state = *nadam.SaveState({&w});
  ASSERT_EQ(state.scalars.size(), 1u);
  EXPECT_EQ(state.scalars[0].second, nadam.u_product());
  EXPECT_NEAR(state.scalars[0].second, U({}, 1) * U({}, 2), 1e-15);

  // Restored as saved, it carries on from there.
  Nadam resumed;
  ASSERT_TRUE(resumed.RestoreState(state, {&w}).ok());
  EXPECT_EQ(resumed.u_product(), nadam.u_product());

  // A state of steps without it cannot be resumed exactly, so it is refused, and nothing changes.
  OptimizerState missing = state;
  missing.scalars.clear();
  absl::Status refused = resumed.RestoreState(missing, {&w});
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("without its 'u_product'"));
  EXPECT_EQ(resumed.u_product(), nadam.u_product());
  // Nor is a scalar Nadam does not have, nor a Nadam state restored into Adam.
  OptimizerState unknown = state;
  unknown.scalars.emplace_back("beta_1_power", 0.5);
  EXPECT_THAT(resumed.RestoreState(unknown, {&w}).message(), HasSubstr("'beta_1_power'"));
  Adam adam;
  const OptimizerState scalars_only{
      .iterations = 2, .learning_rate = 0.001f, .scalars = state.scalars};
  EXPECT_THAT(adam.RestoreState(scalars_only, {&w}).message(),
              HasSubstr("scalar 'u_product' is not one of this optimizer's"));
  // A fresh state (no steps) needs none.
  OptimizerState empty{.learning_rate = 0.001f};
  ASSERT_TRUE(resumed.RestoreState(empty, {&w}).ok());
  EXPECT_EQ(resumed.u_product(), 1.0);
}

}  // namespace
}  // namespace sluice::train::optimizers
