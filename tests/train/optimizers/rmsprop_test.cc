// Rmsprop (train/optimizers/rmsprop.h) against Keras' update rule written out in float64.
#include "train/optimizers/rmsprop.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "tests/train/optimizers/rule_check.h"

namespace sluice::train::optimizers {
namespace {

using testing::ExpectExactResume;
using testing::ExpectFollowsRule;

TEST(RmspropTest, DefaultsAreKeras) {
  const RmspropOptions options;
  EXPECT_FLOAT_EQ(options.learning_rate, 0.001f);
  EXPECT_FLOAT_EQ(options.rho, 0.9f);
  EXPECT_FLOAT_EQ(options.momentum, 0.0f);
  EXPECT_FLOAT_EQ(options.epsilon, 1e-7f);
  EXPECT_FALSE(options.centered);
  EXPECT_FLOAT_EQ(options.weight_decay, 0.0f);
  EXPECT_FLOAT_EQ(RMSprop(0.25f).learning_rate(), 0.25f);
}

// keras/src/optimizers/rmsprop.py, update_step; the weight decay first, as Keras' base
// optimizer applies it. state: velocity, then momentum and average_gradient where present.
void KerasRmsprop(const RmspropOptions& o, double g, double& w, std::vector<double>& state) {
  const double lr = o.learning_rate, rho = o.rho;
  w -= w * o.weight_decay * lr;
  double& velocity = state[0];
  velocity = rho * velocity + (1 - rho) * g * g;
  double denominator = velocity + o.epsilon;
  if (o.centered) {
    double& average_grad = state.back();
    average_grad = rho * average_grad + (1 - rho) * g;
    denominator = velocity - average_grad * average_grad + o.epsilon;
  }
  const double increment = lr * g / std::sqrt(denominator);
  if (o.momentum > 0) {
    double& momentum = state[1];
    momentum = o.momentum * momentum + increment;
    w -= momentum;
  } else {
    w -= increment;
  }
}

TEST(RmspropTest, FollowsKerasRuleFor20Steps) {
  const RmspropOptions plain{.learning_rate = 0.01f};
  Rmsprop rmsprop(plain);
  ExpectFollowsRule(rmsprop,
                    [&](int64_t, double g, double& w, auto& s) { KerasRmsprop(plain, g, w, s); },
                    {.initial_state = {0}, .slot_names = {"velocity"}});
}

TEST(RmspropTest, FollowsKerasRuleWithMomentumCenteredAndDecayFor20Steps) {
  const RmspropOptions all{.learning_rate = 0.005f,
                           .rho = 0.8f,
                           .momentum = 0.9f,
                           .epsilon = 0.05f,
                           .centered = true,
                           .weight_decay = 0.05f};
  Rmsprop rmsprop(all);
  ExpectFollowsRule(
      rmsprop, [&](int64_t, double g, double& w, auto& s) { KerasRmsprop(all, g, w, s); },
      {.initial_state = {0, 0, 0}, .slot_names = {"velocity", "momentum", "average_gradient"}});
  // Momentum alone, not centered.
  const RmspropOptions momentum{.learning_rate = 0.005f, .momentum = 0.5f};
  Rmsprop with_momentum(momentum);
  ExpectFollowsRule(with_momentum,
                    [&](int64_t, double g, double& w, auto& s) { KerasRmsprop(momentum, g, w, s); },
                    {.initial_state = {0, 0}, .slot_names = {"velocity", "momentum"}});
}

TEST(RmspropTest, ResumesExactlyFromASavedState) {
  ExpectExactResume([] {
    return std::make_unique<Rmsprop>(RmspropOptions{
        .learning_rate = 0.01f, .momentum = 0.9f, .centered = true, .weight_decay = 0.01f});
  });
}

}  // namespace
}  // namespace sluice::train::optimizers
