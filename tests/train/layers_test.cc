// The layers: Dense (train/dense_layer.h), Conv2D (train/conv2d_layer.h), the
// stateless ones (train/stateless_layers.h) and Sequential
// (train/sequential.h), ending with a tiny MLP that overfits one batch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/train/gradient_check.h"
#include "train/adam.h"
#include "train/conv2d_layer.h"
#include "train/cross_entropy.h"
#include "train/dense_layer.h"
#include "train/reduce.h"
#include "train/sequential.h"
#include "train/stateless_layers.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

TEST(DenseTest, ForwardAndGradients) {
  Dense dense(2, 3);
  ASSERT_TRUE(dense.kernel().Assign(T({1, 2, 3, 4, 5, 6}, {2, 3})).ok());
  ASSERT_TRUE(dense.bias()->Assign(T({10, 20, 30}, {3})).ok());
  Tensor x = T({1, 1, 2, 0}, {2, 2});
  Tape tape;
  Tensor y = *dense.Forward(x);
  EXPECT_THAT(Values(y), ElementsAre(15, 27, 39, 12, 24, 36));
  auto vars = dense.TrainableVariables();
  ASSERT_EQ(vars.size(), 2u);
  auto g = *tape.Gradient(y, {vars[0]->value(), vars[1]->value()});
  EXPECT_THAT(Values(*g[0]), ElementsAre(3, 3, 3, 1, 1, 1));  // column sums of x
  EXPECT_THAT(Values(*g[1]), ElementsAre(2, 2, 2));
}

TEST(DenseTest, NoBias) {
  Dense dense(2, 3, {.use_bias = false});
  EXPECT_EQ(dense.bias(), nullptr);
  EXPECT_EQ(dense.TrainableVariables().size(), 1u);
}

TEST(Conv2DLayerTest, AddsBiasPerFilter) {
  Conv2D conv(1, 2, 1, 1);
  ASSERT_TRUE(conv.kernel().Assign(T({1, -1}, {1, 1, 1, 2})).ok());
  ASSERT_TRUE(conv.bias()->Assign(T({100, 200}, {2})).ok());
  Tensor y = *conv.Forward(T({1, 2}, {1, 1, 2, 1}));
  EXPECT_EQ(y.shape(), Shape({1, 1, 2, 2}));
  EXPECT_THAT(Values(y), ElementsAre(101, 199, 102, 198));
}

TEST(StatelessLayersTest, Forward) {
  EXPECT_THAT(Values(*ReLU().Forward(T({-1, 2}, {2}))), ElementsAre(0, 2));
  EXPECT_EQ(Flatten().Forward(T({1, 2, 3, 4}, {1, 2, 2}))->shape(), Shape({1, 4}));
  EXPECT_THAT(Values(*MaxPool().Forward(T({1, 4, 3, 2}, {1, 2, 2, 1}))), ElementsAre(4));
}

TEST(StatelessLayersTest, DropoutOnlyWhileTraining) {
  Tensor x = RandomTensor({100}, 5, 1, 2);
  Dropout dropout(0.5f, 9);
  Tensor a = *dropout.Forward(x);
  Tensor b = *dropout.Forward(x);
  EXPECT_FALSE(a.Equals(x));
  EXPECT_FALSE(a.Equals(b));  // a new mask each step
  dropout.SetTraining(false);
  EXPECT_TRUE(dropout.Forward(x)->Equals(x));
}

TEST(SequentialTest, TinyMlpOverfitsOneBatch) {
  Sequential model;
  model.Add(std::make_unique<Dense>(4, 16, DenseOptions{.seed = 1}))
      .Add(std::make_unique<ReLU>())
      .Add(std::make_unique<Dense>(16, 3, DenseOptions{.seed = 2}));
  EXPECT_EQ(model.TrainableVariables().size(), 4u);
  Tensor x = RandomTensor({8, 4}, 11);
  Tensor labels = Tensor::FromVector<int64_t>({0, 1, 2, 0, 1, 2, 0, 1});
  Adam adam({.learning_rate = 0.05f});
  float first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    Tape tape;
    Tensor logits = *model.Forward(x);
    Tensor loss = *Mean(*SparseSoftmaxCrossEntropyWithLogits(logits, labels));
    if (step == 0) first = loss.scalar<float>();
    last = loss.scalar<float>();
    std::vector<Variable*> vars = model.TrainableVariables();
    std::vector<Tensor> values;
    for (Variable* v : vars) values.push_back(v->value());
    auto grads = *tape.Gradient(loss, values);
    for (const auto& g : grads) ASSERT_TRUE(g);
    ASSERT_TRUE(adam.Apply(grads, vars).ok());
  }
  EXPECT_GT(first, 0.8f);  // about ln 3 at the start
  EXPECT_LT(last, 0.02f);
  // Every example is classified right.
  Tensor logits = *model.Forward(x);
  for (int i = 0; i < 8; ++i) {
    const float* row = logits.data<float>() + 3 * i;
    EXPECT_EQ(std::max_element(row, row + 3) - row, labels.data<int64_t>()[i]);
  }
}

}  // namespace
}  // namespace sluice::train::layers
