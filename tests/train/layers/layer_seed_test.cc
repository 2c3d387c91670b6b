// The seeds of layers made without one (train/layers/layer_seed.h): each draws the next of a
// process-wide sequence, as Keras draws each unseeded layer's from its global generator.
#include "train/layers/layer_seed.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/train/gradient_check.h"
#include "train/layers/add.h"
#include "train/layers/dense.h"
#include "train/layers/dropout.h"
#include "train/layers/layer_config.h"
#include "train/layers/model.h"
#include "train/layers/sequential.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;

// Every unseeded layer used seed 0: layers of one shape started bit for bit equal.
TEST(LayerSeedTest, UnseededLayersOfOneShapeStartDifferent) {
  Sequential model{Dense(8), Dense(8), Dense(8)};
  ASSERT_TRUE(model.Build(Shape{1, 8}).ok());
  std::vector<autodiff::Variable*> vars = model.Variables();  // kernel, bias of each
  ASSERT_EQ(vars.size(), 6u);
  EXPECT_NE(Values(vars[2]->value()), Values(vars[4]->value()));
  EXPECT_NE(Values(vars[0]->value()), Values(vars[2]->value()));
}

// ...and two Dense(3) branches joined by Add got equal gradients, so stayed equal all run.
TEST(LayerSeedTest, ParallelBranchesStartDifferent) {
  const SymbolicTensor in = Input({4});
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Make({in}, {Apply(Add(), {Apply(Dense(3), in, "a"), Apply(Dense(3), in, "b")})});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE((*model)->Build(Shape{1, 4}).ok());
  absl::StatusOr<Module*> a = (*model)->GetLayer("a"), b = (*model)->GetLayer("b");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(Values(static_cast<Dense*>(*a)->kernel().value()),
            Values(static_cast<Dense*>(*b)->kernel().value()));
}

// Two unseeded Dropout layers drew the same mask at every step.
TEST(LayerSeedTest, UnseededDropoutsDrawDifferentMasks) {
  Dropout a(0.5f), b(0.5f);
  const Tensor x = T(std::vector<float>(256, 1.0f), {4, 64});
  EXPECT_NE(Values(*a.Forward(x, true)), Values(*b.Forward(x, true)));
}

// The sequence is deterministic, SetRandomSeed restarts it, and a given seed is kept.
TEST(LayerSeedTest, SetRandomSeedRepeatsTheSequenceAndGivenSeedsAreKept) {
  SetRandomSeed(7);
  Dense first(4, 4);
  Dense given(4, 4, {.seed = 3});
  SetRandomSeed(7);
  Dense again(4, 4);
  EXPECT_EQ(Values(first.kernel().value()), Values(again.kernel().value()));
  EXPECT_EQ(Values(given.kernel().value()), Values(Dense(4, 4, {.seed = 3}).kernel().value()));
  SetRandomSeed(8);
  EXPECT_NE(Values(first.kernel().value()), Values(Dense(4, 4).kernel().value()));
}

// A layer's config keeps the seed it drew: the loaded Dropout draws the original's masks.
TEST(LayerSeedTest, AConfigKeepsTheSeedDrawn) {
  Dropout original(0.5f);
  absl::StatusOr<LayerConfig> config = original.GetConfig();
  ASSERT_TRUE(config.ok());
  absl::StatusOr<std::unique_ptr<Module>> loaded = LayerFromConfig(*config);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const Tensor x = T(std::vector<float>(256, 1.0f), {4, 64});
  EXPECT_EQ(Values(*original.Forward(x, true)), Values(*(*loaded)->Forward(x, true)));
}

}  // namespace
}  // namespace sluice::train::layers
