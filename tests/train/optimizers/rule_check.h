#ifndef SLUICE_TESTS_TRAIN_OPTIMIZERS_RULE_CHECK_H_
#define SLUICE_TESTS_TRAIN_OPTIMIZERS_RULE_CHECK_H_

// Checks an optimizer against its update rule written out in plain C++ in float64, element by
// element, over many steps; and that a state saved mid-run and restored into a fresh optimizer
// continues with exactly the same weights. The tests give one configuration a large epsilon, so
// that where a rule puts it (inside or outside a square root, after a maximum) shows.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/train/gradient_check.h"
#include "train/autodiff/variable.h"
#include "train/optimizers/optimizer.h"

namespace sluice::train::optimizers::testing {

// One element's step t (from 1, the optimizer's iteration) with gradient g: updates the weight
// w and the element's state, one entry per slot in the optimizer's slot order.
using ElementRule = std::function<void(int64_t t, double g, double& w, std::vector<double>& state)>;

// The gradients of the run: magnitudes in [0.1, 1] with random signs, so that no step divides
// by a near-zero second moment. Variable 1 has none at steps 1 and 5 (its slots start at step 2
// and then skip one): the rule must use the optimizer's step count, not the variable's.
inline std::vector<std::optional<Tensor>> RuleCheckGradients(int64_t step) {
  std::vector<std::optional<Tensor>> grads(2);
  const Shape shapes[2] = {Shape({5}), Shape({2, 3})};
  for (int v = 0; v < 2; ++v) {
    if (v == 1 && (step == 1 || step == 5)) continue;
    Tensor g = sluice::train::testing::RandomTensor(
        shapes[v], static_cast<uint32_t>(100 * step + v), 0.1f, 1.0f);
    std::mt19937 signs(static_cast<uint32_t>(7 * step + v));
    for (float& x : g.flat<float>()) {
      if (signs() & 1) x = -x;
    }
    grads[v] = std::move(g);
  }
  return grads;
}

struct RuleCheckOptions {
  int steps = 20;
  // |optimizer - rule| allowed per weight and slot, after every step.
  double tolerance = 1e-5;
  // What each slot starts at (Adagrad's initial accumulator).
  std::vector<double> initial_state = {};
  // The names of the slots, in order, as SaveState reports them ("velocity" for "velocity/0").
  std::vector<std::string> slot_names = {};
  // The least total movement of some weight over the run, so that a rule that barely moves the
  // weights cannot pass the check by doing nothing.
  double min_movement = 1e-2;
};

// Runs `optimizer` and `rule` side by side on two variables ([5] and [2, 3], weights uniform in
// [-1, 1)), comparing every weight after every step and every slot at the end.
inline void ExpectFollowsRule(Optimizer& optimizer, const ElementRule& rule,
                              const RuleCheckOptions& options) {
  autodiff::Variable a(sluice::train::testing::RandomTensor(Shape({5}), 11), "a");
  autodiff::Variable b(sluice::train::testing::RandomTensor(Shape({2, 3}), 12), "b");
  std::vector<autodiff::Variable*> vars = {&a, &b};
  std::vector<std::vector<double>> w(2), initial(2);
  std::vector<std::vector<std::vector<double>>> state(2);
  for (int v = 0; v < 2; ++v) {
    for (float x : sluice::train::testing::Values(vars[v]->value())) w[v].push_back(x);
    initial[v] = w[v];
    state[v].assign(w[v].size(), options.initial_state);
  }
  double movement = 0;
  for (int64_t t = 1; t <= options.steps; ++t) {
    std::vector<std::optional<Tensor>> grads = RuleCheckGradients(t);
    ASSERT_TRUE(optimizer.Apply(grads, vars).ok());
    for (int v = 0; v < 2; ++v) {
      if (grads[v]) {
        for (size_t i = 0; i < w[v].size(); ++i) {
          rule(t, grads[v]->data<float>()[i], w[v][i], state[v][i]);
        }
      }
      const std::vector<float> got = sluice::train::testing::Values(vars[v]->value());
      for (size_t i = 0; i < w[v].size(); ++i) {
        ASSERT_NEAR(got[i], w[v][i], options.tolerance)
            << "step " << t << ", variable " << v << ", element " << i;
        movement = std::max(movement, std::fabs(w[v][i] - initial[v][i]));
      }
    }
  }
  EXPECT_GE(movement, options.min_movement);
  absl::StatusOr<OptimizerState> saved = optimizer.SaveState(vars);
  ASSERT_TRUE(saved.ok()) << saved.status();
  ASSERT_EQ(saved->slots.size(), 2 * options.slot_names.size());
  for (const auto& [name, value] : saved->slots) {
    const size_t slash = name.rfind('/');
    const int v = name.back() - '0';
    const std::string slot = name.substr(0, slash);
    int k = -1;
    for (size_t s = 0; s < options.slot_names.size(); ++s) {
      if (options.slot_names[s] == slot) k = static_cast<int>(s);
    }
    ASSERT_GE(k, 0) << "unexpected slot " << name;
    const std::vector<float> got = sluice::train::testing::Values(value);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], state[v][i][k], options.tolerance) << name << " element " << i;
    }
  }
}

// Runs a fresh optimizer from `make` for `steps` steps straight, and another stopped after
// `stop` steps, its state saved, restored into a third on a copy of the variables, which then
// takes the remaining steps: the weights must be identical, bit for bit.
inline void ExpectExactResume(const std::function<std::unique_ptr<Optimizer>()>& make,
                              int steps = 20, int stop = 9) {
  auto fresh_vars = [] {
    std::vector<std::unique_ptr<autodiff::Variable>> vars;
    vars.push_back(std::make_unique<autodiff::Variable>(
        sluice::train::testing::RandomTensor(Shape({5}), 11), "a"));
    vars.push_back(std::make_unique<autodiff::Variable>(
        sluice::train::testing::RandomTensor(Shape({2, 3}), 12), "b"));
    return vars;
  };
  auto pointers = [](const std::vector<std::unique_ptr<autodiff::Variable>>& vars) {
    return std::vector<autodiff::Variable*>{vars[0].get(), vars[1].get()};
  };
  auto straight_vars = fresh_vars();
  std::unique_ptr<Optimizer> straight = make();
  for (int t = 1; t <= steps; ++t) {
    ASSERT_TRUE(straight->Apply(RuleCheckGradients(t), pointers(straight_vars)).ok());
  }

  auto first_vars = fresh_vars();
  std::unique_ptr<Optimizer> first = make();
  for (int t = 1; t <= stop; ++t) {
    ASSERT_TRUE(first->Apply(RuleCheckGradients(t), pointers(first_vars)).ok());
  }
  absl::StatusOr<OptimizerState> state = first->SaveState(pointers(first_vars));
  ASSERT_TRUE(state.ok()) << state.status();
  auto resumed_vars = fresh_vars();
  for (int v = 0; v < 2; ++v) {
    resumed_vars[v]->mutable_value() = first_vars[v]->value().Clone();
  }
  std::unique_ptr<Optimizer> resumed = make();
  ASSERT_TRUE(resumed->RestoreState(*state, pointers(resumed_vars)).ok());
  EXPECT_EQ(resumed->iterations(), stop);
  for (int t = stop + 1; t <= steps; ++t) {
    ASSERT_TRUE(resumed->Apply(RuleCheckGradients(t), pointers(resumed_vars)).ok());
  }
  for (int v = 0; v < 2; ++v) {
    EXPECT_EQ(sluice::train::testing::Values(resumed_vars[v]->value()),
              sluice::train::testing::Values(straight_vars[v]->value()))
        << "variable " << v;
  }
}

}  // namespace sluice::train::optimizers::testing

#endif  // SLUICE_TESTS_TRAIN_OPTIMIZERS_RULE_CHECK_H_
