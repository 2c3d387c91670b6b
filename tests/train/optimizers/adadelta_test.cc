// Adadelta (train/optimizers/adadelta.h) against Keras' update rule written out in float64.
#include "train/optimizers/adadelta.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "tests/train/optimizers/rule_check.h"

namespace sluice::train::optimizers {
namespace {

using testing::ExpectExactResume;
using testing::ExpectFollowsRule;

TEST(AdadeltaTest, DefaultsAreKeras) {
  const AdadeltaOptions options;
  EXPECT_FLOAT_EQ(options.learning_rate, 0.001f);
  EXPECT_FLOAT_EQ(options.rho, 0.95f);
  EXPECT_FLOAT_EQ(options.epsilon, 1e-7f);
  EXPECT_FLOAT_EQ(options.weight_decay, 0.0f);
  EXPECT_FLOAT_EQ(Adadelta(0.25f).learning_rate(), 0.25f);
}

// keras/src/optimizers/adadelta.py, update_step; the weight decay first. state:
// accumulated_grad, accumulated_delta_var.
void KerasAdadelta(const AdadeltaOptions& o, double g, double& w, std::vector<double>& state) {
  const double lr = o.learning_rate, rho = o.rho;
  w -= w * o.weight_decay * lr;
  auto rms = [&](double x) { return std::sqrt(x + o.epsilon); };
  double& accumulated_grad = state[0];
  double& accumulated_delta_var = state[1];
  accumulated_grad = rho * accumulated_grad + (1 - rho) * g * g;
  const double delta_var = -rms(accumulated_delta_var) * g / rms(accumulated_grad);
  accumulated_delta_var = rho * accumulated_delta_var + (1 - rho) * delta_var * delta_var;
  w += lr * delta_var;
}

TEST(AdadeltaTest, FollowsKerasRuleFor20Steps) {
  // Zeiler's learning rate of 1, so that the weights move visibly.
  const AdadeltaOptions paper{.learning_rate = 1.0f};
  Adadelta adadelta(paper);
  ExpectFollowsRule(adadelta,
                    [&](int64_t, double g, double& w, auto& s) { KerasAdadelta(paper, g, w, s); },
                    {.tolerance = 1e-6,
                     .initial_state = {0, 0},
                     .slot_names = {"accumulated_grad", "accumulated_delta_var"},
                     .min_movement = 3e-3});
  const AdadeltaOptions other{
      .learning_rate = 2.0f, .rho = 0.8f, .epsilon = 1e-2f, .weight_decay = 0.01f};
  Adadelta custom(other);
  ExpectFollowsRule(
      custom, [&](int64_t, double g, double& w, auto& s) { KerasAdadelta(other, g, w, s); },
      {.initial_state = {0, 0}, .slot_names = {"accumulated_grad", "accumulated_delta_var"}});
}

TEST(AdadeltaTest, ResumesExactlyFromASavedState) {
  ExpectExactResume([] {
    return std::make_unique<Adadelta>(AdadeltaOptions{.learning_rate = 1.0f, .rho = 0.9f});
  });
}

}  // namespace
}  // namespace sluice::train::optimizers
