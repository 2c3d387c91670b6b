// Dense (train/dense_layer.h): forward values, gradients by hand and by finite
// differences.
#include "train/layers/dense.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/train/gradient_check.h"
#include "tests/train/module_gradient_check.h"
#include "train/layers/layer_config.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::CheckModuleGradients;
using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

TEST(DenseTest, ForwardAndGradients) {
  Dense dense(2, 3);
  ASSERT_TRUE(dense.kernel().Assign(T({1, 2, 3, 4, 5, 6}, {2, 3})).ok());
  ASSERT_TRUE(dense.bias()->Assign(T({10, 20, 30}, {3})).ok());
  Tensor x = T({1, 1, 2, 0}, {2, 2});
  autodiff::Tape tape;
  Tensor y = *dense.Forward(x, /*training=*/true);
  EXPECT_THAT(Values(y), ElementsAre(15, 27, 39, 12, 24, 36));
  auto vars = dense.TrainableVariables();
  ASSERT_EQ(vars.size(), 2u);
  auto g = *tape.Gradient(y, {vars[0]->value(), vars[1]->value()});
  EXPECT_THAT(Values(*g[0]), ElementsAre(3, 3, 3, 1, 1, 1));  // column sums of x
  EXPECT_THAT(Values(*g[1]), ElementsAre(2, 2, 2));
}

// Units below 1 are an error naming the layer, as Keras' ValueError; -3 made a tensor of -12
// elements, a 64-byte buffer and a memset past it.
TEST(DenseTest, UnitsBelowOneAreAnError) {
  for (int64_t units : {0, -3}) {
    Dense dense(units);
    absl::StatusOr<Tensor> y = dense.Forward(RandomTensor({2, 4}, 1), false);
    ASSERT_FALSE(y.ok()) << units;
    EXPECT_EQ(y.status().message(), absl::StrCat("dense: units must be >= 1, got ", units));
    EXPECT_FALSE(dense.built());
  }
}

// Dense multiplies [batch, features]: an image batch (a missing Flatten after a Conv2D) is
// refused with the hint before a kernel over its channels is made, by the layer and by the
// config sizer alike (the layer built, then MatMulBias refused it with its own message).
TEST(DenseTest, ImagesSayAddFlattenAndLeaveTheLayerUnbuilt) {
  Dense dense(10);
  absl::StatusOr<Tensor> y = dense.Forward(RandomTensor({1, 6, 6, 8}, 1), false);
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(), ::testing::HasSubstr("add Flatten()"));
  EXPECT_FALSE(dense.built());
  absl::StatusOr<LayerConfig> config = Dense(10).GetConfig();
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(LayerSizeFromConfig(*config, Shape{1, 6, 6, 8}).ok());
}

TEST(DenseTest, NoBias) {
  Dense dense(2, 3, {.use_bias = false});
  EXPECT_EQ(dense.bias(), nullptr);
  EXPECT_EQ(dense.TrainableVariables().size(), 1u);
  EXPECT_EQ(dense.Variables().size(), 1u);
}

TEST(DenseTest, FiniteDifferences) {
  Dense dense(3, 2, {.seed = 4});
  ASSERT_TRUE(dense.bias()->Assign(T({0.5f, -0.25f}, {2})).ok());
  EXPECT_EQ(CheckModuleGradients(dense, RandomTensor({4, 3}, 8), /*training=*/true), "");
}

TEST(DenseTest, VariableNames) {
  Dense dense(3, 2);
  auto vars = dense.Variables();
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_EQ(vars[0]->name(), "dense/kernel");
  EXPECT_EQ(vars[1]->name(), "dense/bias");
}

}  // namespace
}  // namespace sluice::train::layers
