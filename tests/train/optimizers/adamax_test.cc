// Adamax (train/optimizers/adamax.h) against Keras' update rule written out in float64.
#include "train/optimizers/adamax.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "tests/train/optimizers/rule_check.h"

namespace sluice::train::optimizers {
namespace {

using testing::ExpectExactResume;
using testing::ExpectFollowsRule;

TEST(AdamaxTest, DefaultsAreKeras) {
  const AdamaxOptions options;
  EXPECT_FLOAT_EQ(options.learning_rate, 0.001f);
  EXPECT_FLOAT_EQ(options.beta_1, 0.9f);
  EXPECT_FLOAT_EQ(options.beta_2, 0.999f);
  EXPECT_FLOAT_EQ(options.epsilon, 1e-7f);
  EXPECT_FLOAT_EQ(options.weight_decay, 0.0f);
  EXPECT_FLOAT_EQ(Adamax(0.25f).learning_rate(), 0.25f);
}

// keras/src/optimizers/adamax.py, update_step; the weight decay first. state: momentum (m),
// norm (u).
void KerasAdamax(const AdamaxOptions& o, int64_t t, double g, double& w,
                 std::vector<double>& state) {
  const double lr = o.learning_rate, beta_1 = o.beta_1, beta_2 = o.beta_2;
  w -= w * o.weight_decay * lr;
  const double beta_1_power = std::pow(beta_1, static_cast<double>(t));
  double& m = state[0];
  double& u = state[1];
  m += (g - m) * (1 - beta_1);
  u = std::max(beta_2 * u, std::fabs(g));
  w -= lr * m / ((1 - beta_1_power) * (u + o.epsilon));
}

TEST(AdamaxTest, FollowsKerasRuleFor20Steps) {
  const AdamaxOptions plain{.learning_rate = 0.01f};
  Adamax adamax(plain);
  ExpectFollowsRule(
      adamax, [&](int64_t t, double g, double& w, auto& s) { KerasAdamax(plain, t, g, w, s); },
      {.initial_state = {0, 0}, .slot_names = {"momentum", "norm"}});
  const AdamaxOptions other{.learning_rate = 0.02f,
                            .beta_1 = 0.8f,
                            .beta_2 = 0.9f,
                            .epsilon = 0.05f,
                            .weight_decay = 0.1f};
  Adamax custom(other);
  ExpectFollowsRule(
      custom, [&](int64_t t, double g, double& w, auto& s) { KerasAdamax(other, t, g, w, s); },
      {.initial_state = {0, 0}, .slot_names = {"momentum", "norm"}});
}

TEST(AdamaxTest, ResumesExactlyFromASavedState) {
  ExpectExactResume([] {
    return std::make_unique<Adamax>(AdamaxOptions{.learning_rate = 0.01f, .weight_decay = 0.01f});
  });
}

}  // namespace
}  // namespace sluice::train::optimizers
