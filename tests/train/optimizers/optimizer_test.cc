// The shared Optimizer machinery (train/optimizer.h): argument checks,
// clipping by global norm, schedules and the base rate, and saving and
// restoring state so that a resumed run takes exactly the same steps.
#include "train/optimizers/optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/train/backend/guarded_backend.h"
#include "tests/train/gradient_check.h"
#include "train/backend/transfer.h"
#include "train/optimizers/adam.h"
#include "train/optimizers/adamw.h"
#include "train/optimizers/learning_rate_schedule.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::optimizers {
namespace {

using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

TEST(OptimizerTest, MissingGradientLeavesVariableAndMismatchIsError) {
  Sgd sgd({.learning_rate = 1});
  autodiff::Variable a(T({1}, {1})), b(T({5}, {1}));
  ASSERT_TRUE(sgd.Apply({std::nullopt, T({1}, {1})}, {&a, &b}).ok());
  EXPECT_THAT(Values(a.value()), ElementsAre(1));
  EXPECT_THAT(Values(b.value()), ElementsAre(4));
  EXPECT_FALSE(sgd.Apply({T({1, 2}, {2})}, {&a}).ok());
  EXPECT_FALSE(sgd.Apply({}, {&a}).ok());
  EXPECT_EQ(sgd.iterations(), 1);  // failed calls take no step
}

TEST(OptimizerTest, ClipsByGlobalNorm) {
  // Gradients [3, 4] and [12]: global norm 13. Clipped to 6.5 they halve.
  Sgd sgd({.learning_rate = 1});
  sgd.set_clip_global_norm(6.5f);
  autodiff::Variable a(T({0, 0}, {2})), b(T({0}, {1})), c(T({7}, {1}));
  std::vector<std::optional<Tensor>> grads = {T({3, 4}, {2}), T({12}, {1}), std::nullopt};
  ASSERT_TRUE(sgd.Apply(grads, {&a, &b, &c}).ok());
  EXPECT_THAT(Values(a.value()), Pointwise(FloatNear(1e-6), {-1.5f, -2.0f}));
  EXPECT_THAT(Values(b.value()), Pointwise(FloatNear(1e-6), {-6.0f}));
  EXPECT_THAT(Values(c.value()), ElementsAre(7));
  EXPECT_THAT(Values(*grads[0]), ElementsAre(3, 4));  // the caller's gradients are untouched
  // Below the limit nothing is scaled.
  sgd.set_clip_global_norm(100);
  ASSERT_TRUE(sgd.Apply(grads, {&a, &b, &c}).ok());
  EXPECT_THAT(Values(a.value()), Pointwise(FloatNear(1e-6), {-4.5f, -6.0f}));
  // 0 turns clipping off.
  sgd.set_clip_global_norm(0);
  ASSERT_TRUE(sgd.Apply({T({30, 40}, {2}), std::nullopt, std::nullopt}, {&a, &b, &c}).ok());
  EXPECT_THAT(Values(a.value()), Pointwise(FloatNear(1e-5), {-34.5f, -46.0f}));
}

TEST(OptimizerTest, ScheduleGivesTheRateAtEachStep) {
  // Values 1 for steps 0 and 1, then 0.5; Sgd with g = 1 moves w by the rate.
  Sgd sgd({.learning_rate = 0.1f});
  EXPECT_FLOAT_EQ(sgd.learning_rate(), 0.1f);
  sgd.set_schedule(*PiecewiseConstantDecay::Create({1}, {1.0f, 0.5f}));
  autodiff::Variable w(T({0}, {1}));
  std::vector<float> rates, weights;
  for (int i = 0; i < 3; ++i) {
    rates.push_back(sgd.learning_rate());
    ASSERT_TRUE(sgd.Apply({T({1}, {1})}, {&w}).ok());
    weights.push_back(w.value().data<float>()[0]);
  }
  EXPECT_THAT(rates, ElementsAre(1.0f, 1.0f, 0.5f));
  EXPECT_THAT(weights, ElementsAre(-1.0f, -2.0f, -2.5f));
  // A new base rate scales the schedule by base / initial base: 0.05 / 0.1.
  sgd.set_learning_rate(0.05f);
  EXPECT_FLOAT_EQ(sgd.learning_rate(), 0.25f);
  ASSERT_TRUE(sgd.Apply({T({1}, {1})}, {&w}).ok());
  EXPECT_FLOAT_EQ(w.value().data<float>()[0], -2.75f);
  // Without a schedule the base rate is the rate.
  sgd.set_schedule(nullptr);
  EXPECT_FLOAT_EQ(sgd.learning_rate(), 0.05f);
}

// Steps [begin, end) of a fixed sequence of random gradients.
void Steps(Optimizer& opt, std::vector<autodiff::Variable*> vars, int begin, int end) {
  for (int i = begin; i < end; ++i) {
    std::vector<std::optional<Tensor>> grads;
    for (size_t k = 0; k < vars.size(); ++k) {
      grads.push_back(RandomTensor(vars[k]->shape(), 100 * i + static_cast<uint32_t>(k)));
    }
    ASSERT_TRUE(opt.Apply(grads, vars).ok());
  }
}

template <typename MakeOptimizer>
void ExpectResumeIsExact(MakeOptimizer make) {
  autodiff::Variable a(T({1, 2, 3}, {3})), b(T({-1, 0.5f}, {2}));
  auto uninterrupted = make();
  Steps(*uninterrupted, {&a, &b}, 0, 6);

  autodiff::Variable a2(T({1, 2, 3}, {3})), b2(T({-1, 0.5f}, {2}));
  auto first = make();
  Steps(*first, {&a2, &b2}, 0, 3);
  OptimizerState state = *first->SaveState({&a2, &b2});
  Steps(*first, {&a2, &b2}, 3, 4);  // the saved state is a copy: later steps do not change it
  // The variables as they were at the save (a checkpoint holds them too).
  autodiff::Variable a4(T({1, 2, 3}, {3})), b4(T({-1, 0.5f}, {2}));
  {
    auto replay = make();
    Steps(*replay, {&a4, &b4}, 0, 3);
  }
  auto resumed = make();
  ASSERT_TRUE(resumed->RestoreState(state, {&a4, &b4}).ok());
  EXPECT_EQ(resumed->iterations(), 3);
  Steps(*resumed, {&a4, &b4}, 3, 6);
  EXPECT_TRUE(a4.value().Equals(a.value())) << a4.value().DebugString();
  EXPECT_TRUE(b4.value().Equals(b.value())) << b4.value().DebugString();
}

TEST(OptimizerTest, SgdResumesExactly) {
  ExpectResumeIsExact([] {
    auto opt = std::make_unique<Sgd>(SgdOptions{.learning_rate = 0.1f, .momentum = 0.9f});
    opt->set_schedule(std::make_shared<CosineDecay>(
        CosineDecayOptions{.initial_learning_rate = 0.1, .decay_steps = 6}));
    return opt;
  });
}

TEST(OptimizerTest, AdamResumesExactly) {
  ExpectResumeIsExact([] { return std::make_unique<Adam>(AdamOptions{.learning_rate = 0.01f}); });
}

TEST(OptimizerTest, RestoredBaseRateCarriesOver) {
  Sgd sgd({.learning_rate = 0.1f});
  sgd.set_learning_rate(0.02f);  // as ReduceLROnPlateau would
  autodiff::Variable w(T({0}, {1}));
  OptimizerState state = *sgd.SaveState({&w});
  EXPECT_FLOAT_EQ(state.learning_rate, 0.02f);
  Sgd resumed({.learning_rate = 0.1f});
  ASSERT_TRUE(resumed.RestoreState(state, {&w}).ok());
  EXPECT_FLOAT_EQ(resumed.learning_rate(), 0.02f);
}

// A checkpoint's state shares the host slots it writes at once; the default copies them.
TEST(OptimizerTest, SaveStateSharesHostSlotsOnlyWhenAsked) {
  Sgd sgd({.learning_rate = 0.1f, .momentum = 0.9f});
  autodiff::Variable w(T({1, 2}, {2}));
  ASSERT_TRUE(sgd.Apply({T({1, 1}, {2})}, {&w}).ok());
  absl::StatusOr<OptimizerState> shared = sgd.SaveState({&w}, autodiff::HostValues::kShare);
  absl::StatusOr<OptimizerState> copied = sgd.SaveState({&w});
  ASSERT_TRUE(shared.ok() && copied.ok());
  ASSERT_EQ(shared->slots.size(), 1u);
  ASSERT_EQ(copied->slots.size(), 1u);
  EXPECT_FALSE(shared->slots[0].second.SharesBufferWith(copied->slots[0].second));
  EXPECT_EQ(Values(shared->slots[0].second), Values(copied->slots[0].second));
  // The shared one follows the optimizer's next step; the copy keeps the values it was given.
  const std::vector<float> before = Values(copied->slots[0].second);
  ASSERT_TRUE(sgd.Apply({T({1, 1}, {2})}, {&w}).ok());
  EXPECT_NE(Values(shared->slots[0].second), before);
  EXPECT_EQ(Values(copied->slots[0].second), before);
}

TEST(OptimizerTest, RestoreRejectsForeignState) {
  Adam adam;
  autodiff::Variable w(T({1, 2}, {2}));
  auto restore = [&](std::string name, Tensor value) {
    return adam.RestoreState({.iterations = 1, .learning_rate = 0.001f, .slots = {{name, value}}},
                             {&w});
  };
  EXPECT_TRUE(restore("m/0", T({1, 2}, {2})).ok());
  EXPECT_THAT(restore("velocity/0", T({1, 2}, {2})).message(), HasSubstr("velocity/0"));
  EXPECT_THAT(restore("m/1", T({1, 2}, {2})).message(), HasSubstr("1 variables"));
  EXPECT_THAT(restore("m/x", T({1, 2}, {2})).message(), HasSubstr("m/x"));
  EXPECT_THAT(restore("v/0", T({1, 2, 3}, {3})).message(), HasSubstr("[3]"));
}

// Keras' positional learning rate, and a schedule in its place.
TEST(OptimizerTest, TheLearningRateOrASchedulePositionallyAsInKeras) {
  EXPECT_FLOAT_EQ(Adam(0.1f).learning_rate(), 0.1f);
  EXPECT_FLOAT_EQ(Sgd(0.5f, {.momentum = 0.9f}).learning_rate(), 0.5f);
  EXPECT_FLOAT_EQ(AdamW(0.02f).learning_rate(), 0.02f);
  EXPECT_FLOAT_EQ(SGD().learning_rate(), 0.01f);  // Keras' default
  Sgd scheduled(std::make_shared<ExponentialDecay>(
      ExponentialDecayOptions{.initial_learning_rate = 1.0, .decay_steps = 1, .decay_rate = 0.5}));
  autodiff::Variable w(T({1}, {1}));
  EXPECT_FLOAT_EQ(scheduled.learning_rate(), 1.0f);
  ASSERT_TRUE(scheduled.Apply({T({1}, {1})}, {&w}).ok());  // w = 1 - 1 * 1
  EXPECT_FLOAT_EQ(scheduled.learning_rate(), 0.5f);
  EXPECT_FLOAT_EQ(w.value().data<float>()[0], 0.0f);
}

// The variables that read one step tensor are updated by one backend call (one kernel on a
// GPU, one node of its graph), and a decay exclusion makes two: counted on the guarded device,
// which counts every kernel call. The values are Apply's on the CPU, bit for bit.
TEST(OptimizerTest, UpdatesTheVariablesOfOneStepTensorInOneBackendCall) {
  train::testing::RegisterGuardedBackend();
  const std::vector<Shape> shapes = {{8, 16}, {16}, {16, 4}, {4}};
  const std::vector<std::string> names = {"d1/kernel", "d1/bias", "d2/kernel", "d2/bias"};
  for (const bool exclude : {false, true}) {
    SCOPED_TRACE(exclude ? "biases not decayed" : "all decayed");
    std::vector<std::unique_ptr<autodiff::Variable>> on_cpu, guarded;
    std::vector<autodiff::Variable*> cpu_vars, guarded_vars;
    std::vector<std::optional<Tensor>> cpu_grads, guarded_grads;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const uint32_t seed = static_cast<uint32_t>(i);
      absl::StatusOr<Tensor> w = backend::CopyTo(RandomTensor(shapes[i], seed), Device::Guarded());
      absl::StatusOr<Tensor> g =
          backend::CopyTo(RandomTensor(shapes[i], seed + 10), Device::Guarded());
      ASSERT_TRUE(w.ok() && g.ok());
      on_cpu.push_back(
          std::make_unique<autodiff::Variable>(RandomTensor(shapes[i], seed), names[i]));
      guarded.push_back(std::make_unique<autodiff::Variable>(*w, names[i]));
      cpu_vars.push_back(on_cpu.back().get());
      guarded_vars.push_back(guarded.back().get());
      cpu_grads.push_back(RandomTensor(shapes[i], seed + 10));
      guarded_grads.push_back(*g);
    }
    AdamW cpu_adamw(0.01f, {.weight_decay = 0.1f}), guarded_adamw(0.01f, {.weight_decay = 0.1f});
    if (exclude) {
      cpu_adamw.ExcludeFromWeightDecay({"bias"});
      guarded_adamw.ExcludeFromWeightDecay({"bias"});
    }
    for (int step = 0; step < 2; ++step) {
      ASSERT_TRUE(cpu_adamw.Apply(cpu_grads, cpu_vars).ok());
      ASSERT_TRUE(guarded_adamw.PrepareStep(guarded_vars).ok());
      const int64_t before = train::testing::GuardedKernelCalls();
      ASSERT_TRUE(guarded_adamw.UpdateVariables(guarded_grads, guarded_vars).ok());
      EXPECT_EQ(train::testing::GuardedKernelCalls() - before, exclude ? 2 : 1);
    }
    for (size_t i = 0; i < shapes.size(); ++i) {
      absl::StatusOr<Tensor> have = backend::ToHost(guarded[i]->value());
      ASSERT_TRUE(have.ok());
      EXPECT_TRUE(have->Equals(on_cpu[i]->value())) << names[i];
    }
  }
}

// A variable listed twice, or a gradient on another device than its variable, is refused
// before anything changes, naming the variable.
TEST(OptimizerTest, RefusesAVariableTwiceAndAGradientOnAnotherDevice) {
  train::testing::RegisterGuardedBackend();
  autodiff::Variable v(T({1, 2}, {2}), "dense/kernel");
  const Tensor g = T({0.5f, 0.5f}, {2});
  Sgd sgd(0.1f);
  const absl::Status twice = sgd.Apply({g, g}, {&v, &v});
  EXPECT_EQ(twice.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(twice.message(), HasSubstr("variable 'dense/kernel' is listed twice"));
  absl::StatusOr<Tensor> elsewhere = backend::CopyTo(g, Device::Guarded());
  ASSERT_TRUE(elsewhere.ok());
  const absl::Status moved = sgd.Apply({*elsewhere}, {&v});
  EXPECT_EQ(moved.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(moved.message(), HasSubstr("but variable 'dense/kernel' is on cpu"));
  EXPECT_EQ(sgd.iterations(), 0);
  EXPECT_THAT(Values(v.value()), ElementsAre(1, 2));
}

}  // namespace
}  // namespace sluice::train::optimizers
