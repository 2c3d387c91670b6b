// Keras-style shape inference (train/layers/module.h): layers that learn their input size on the
// first call or from Build(), their names inside containers, and the errors that name a layer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "tests/train/backend/guarded_backend.h"
#include "tests/train/gradient_check.h"
#include "train/layers/batch_norm.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"
#include "train/layers/flatten.h"
#include "train/layers/relu.h"
#include "train/layers/sequential.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Names(Module& m) {
  std::vector<std::string> out;
  for (autodiff::Variable* v : m.Variables()) out.push_back(v->name());
  return out;
}

TEST(LazyBuildTest, DenseBuildsOnFirstCallWithTheSameValuesAsTheExplicitConstructor) {
  Dense lazy(5, Activation::kLinear, {.seed = 7});
  Dense eager(3, 5, {.seed = 7});
  EXPECT_FALSE(lazy.built());
  EXPECT_TRUE(lazy.Variables().empty());
  const Tensor x = RandomTensor({2, 3}, 1);
  const Tensor y_lazy = *lazy.Forward(x, /*training=*/true);
  EXPECT_TRUE(lazy.built());
  EXPECT_EQ(lazy.kernel().shape(), (Shape{3, 5}));
  EXPECT_EQ(Values(lazy.kernel().value()), Values(eager.kernel().value()));
  EXPECT_EQ(Values(y_lazy), Values(*eager.Forward(x, true)));
  // Created once: a second call keeps the same variable objects.
  autodiff::Variable* kernel = &lazy.kernel();
  ASSERT_TRUE(lazy.Forward(x, true).ok());
  EXPECT_EQ(&lazy.kernel(), kernel);
}

TEST(LazyBuildTest, AnotherInnerSizeAfterBuildingNamesTheLayerAndBothShapes) {
  Dense dense(4);
  ASSERT_TRUE(dense.Forward(RandomTensor({2, 3}, 1), false).ok());
  absl::StatusOr<Tensor> y = dense.Forward(RandomTensor({2, 6}, 1), false);
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(), HasSubstr("dense"));
  EXPECT_THAT(y.status().message(), HasSubstr("3"));
  EXPECT_THAT(y.status().message(), HasSubstr("[2, 6]"));
}

TEST(LazyBuildTest, Conv2DAndBatchNormLearnTheirChannels) {
  Conv2D lazy(4, 3, {.seed = 3});
  Conv2D eager(2, 4, 3, 3, {.seed = 3});
  BatchNorm bn;
  const Tensor x = RandomTensor({1, 5, 5, 2}, 2);
  Tensor y = *lazy.Forward(x, true);
  EXPECT_EQ(lazy.kernel().shape(), (Shape{3, 3, 2, 4}));
  EXPECT_EQ(Values(y), Values(*eager.Forward(x, true)));
  ASSERT_TRUE(bn.Forward(y, true).ok());
  EXPECT_EQ(bn.gamma().shape(), (Shape{4}));
  absl::StatusOr<Tensor> bad = lazy.Forward(RandomTensor({1, 5, 5, 3}, 2), true);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("conv2d: built for 2 input channels"));
}

TEST(LazyBuildTest, SequentialNamesLazyVariablesUniquelyAndNestedOnes) {
  auto inner = std::make_unique<Sequential>(Sequential{Dense(8, Activation::kRelu), Dense(8)});
  Sequential model{Dense(16, Activation::kRelu), std::move(inner), Dense(2)};
  EXPECT_FALSE(model.built());
  ASSERT_TRUE(model.Build(Shape{32, 4}).ok());
  EXPECT_TRUE(model.built());
  EXPECT_THAT(Names(model),
              ElementsAre("0/dense/kernel", "0/dense/bias", "1/0/dense/kernel", "1/0/dense/bias",
                          "1/1/dense/kernel", "1/1/dense/bias", "2/dense/kernel", "2/dense/bias"));
  // Building twice (or calling) renames nothing.
  ASSERT_TRUE(model.Forward(RandomTensor({3, 4}, 1), false).ok());
  EXPECT_EQ(Names(model)[2], "1/0/dense/kernel");
  EXPECT_TRUE(autodiff::CheckUniqueNames(model.Variables(), "model").ok());
}

TEST(LazyBuildTest, SequentialTakesUniquePtrsInAnInitializerList) {
  Sequential model({std::make_unique<Dense>(4, 3), std::make_unique<ReLU>()});
  EXPECT_EQ(model.size(), 2u);
  EXPECT_THAT(Names(model), ElementsAre("0/dense/kernel", "0/dense/bias"));
}

TEST(LazyBuildTest, ShapeErrorsNameTheLayer) {
  Sequential model{Dense(3, 5), Flatten(), Dense(7, 2)};
  absl::StatusOr<Tensor> y = model.Forward(RandomTensor({2, 3}, 1), false);
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(), HasSubstr("layer 2 (dense)"));
  EXPECT_THAT(y.status().message(), HasSubstr("[2, 5]"));
}

TEST(LazyBuildTest, DuplicateNamesAreRefusedWhenSaving) {
  Dense a(2, 2), b(2, 2);  // both "dense/kernel", not in a container
  std::vector<autodiff::Variable*> vars = {&a.kernel(), &b.kernel()};
  absl::Status s = autodiff::SnapshotVariables(vars).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'dense/kernel'"));
}

TEST(LazyBuildTest, DenseActivationIsApplied) {
  Dense relu(2, 2, {.activation = Activation::kRelu});
  Dense sigmoid(2, Activation::kSigmoid);
  ASSERT_TRUE(relu.kernel().Assign(testing::T({1, -1, -1, 1}, {2, 2})).ok());
  Tensor y = *relu.Forward(testing::T({2, 1}, {1, 2}), false);
  EXPECT_THAT(Values(y), ElementsAre(1, 0));  // [2 - 1, -2 + 1] -> relu
  ASSERT_TRUE(sigmoid.Build(Shape{1, 2}).ok());
  ASSERT_TRUE(sigmoid.kernel().Assign(testing::T({0, 0, 0, 0}, {2, 2})).ok());
  EXPECT_THAT(Values(*sigmoid.Forward(testing::T({3, 4}, {1, 2}), false)), ElementsAre(0.5f, 0.5f));
  EXPECT_EQ(*ParseActivation("relu"), Activation::kRelu);
  EXPECT_FALSE(ParseActivation("swish").ok());
}

// A model with built and lazy layers, moved to a device before Build: Build runs on that device
// (it ran the built layers on CPU zeros: "inputs on different devices"), and the lazy layers'
// new variables are made there.
TEST(LazyBuildTest, GuardedBuildAfterToRunsOnTheModelsDevice) {
  ::sluice::train::testing::RegisterGuardedBackend();
  Sequential model{Dense(4, 8), Dense(2)};
  ASSERT_TRUE(model.To(Device::Guarded()).ok());
  const absl::Status built = model.Build(Shape{1, 4});
  ASSERT_TRUE(built.ok()) << built;
  for (autodiff::Variable* v : model.Variables()) {
    EXPECT_EQ(v->device(), Device::Guarded()) << v->name();
  }
}

}  // namespace
}  // namespace sluice::train::layers
