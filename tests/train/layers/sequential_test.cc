// Sequential (train/sequential.h): variable order and names, `training`
// passed down, and a tiny MLP that overfits one batch.
#include "train/layers/sequential.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "core/status_macros.h"
#include "tests/train/gradient_check.h"
#include "tests/train/layers/overfit_test_util.h"
#include "train/layers/avg_pool.h"
#include "train/layers/batch_norm.h"
#include "train/layers/dense.h"
#include "train/layers/dropout.h"
#include "train/layers/flatten.h"
#include "train/layers/global_avg_pool.h"
#include "train/layers/max_pool.h"
#include "train/layers/relu.h"
#include "train/ops/cross_entropy.h"
#include "train/ops/reduce.h"
#include "train/optimizers/adam.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::Names;
using ::sluice::train::testing::RandomTensor;
using ::testing::ElementsAre;

TEST(SequentialTest, VariablesAreUniqueAndTrainableFirst) {
  Sequential model;
  model.Add(std::make_unique<Dense>(4, 3))
      .Add(std::make_unique<Dropout>(0.5f))
      .Add(std::make_unique<Dense>(3, 2));
  EXPECT_THAT(Names(model.TrainableVariables()),
              ElementsAre("0/dense/kernel", "0/dense/bias", "2/dense/kernel", "2/dense/bias"));
  EXPECT_THAT(Names(model.Variables()),
              ElementsAre("0/dense/kernel", "0/dense/bias", "2/dense/kernel", "2/dense/bias",
                          "1/dropout/calls"));
  // Nested containers compose their prefixes.
  Sequential outer;
  outer.Add(std::make_unique<Dense>(2, 4)).Add(std::make_unique<Sequential>(std::move(model)));
  EXPECT_EQ(Names(outer.Variables()).back(), "1/1/dropout/calls");
  EXPECT_EQ(Names(outer.Variables())[2], "1/0/dense/kernel");
}

TEST(SequentialTest, PassesTrainingDown) {
  Sequential model;
  model.Add(std::make_unique<Dropout>(0.5f, 3));
  Tensor x = RandomTensor({50}, 2, 1, 2);
  EXPECT_TRUE(model.Forward(x, false)->Equals(x));
  EXPECT_FALSE(model.Forward(x, true)->Equals(x));
}

TEST(SequentialTest, TinyMlpOverfitsOneBatch) {
  Sequential model;
  model.Add(std::make_unique<Dense>(4, 16, DenseOptions{.seed = 1}))
      .Add(std::make_unique<ReLU>())
      .Add(std::make_unique<Dense>(16, 3, DenseOptions{.seed = 2}));
  EXPECT_EQ(model.TrainableVariables().size(), 4u);
  ASSERT_NO_FATAL_FAILURE(testing::ExpectOverfitsOneBatch(model, 200));
  const Tensor x = testing::OverfitInputs(), labels = testing::OverfitLabels();
  // Every example is classified right.
  Tensor logits = *model.Forward(x, false);
  for (int i = 0; i < 8; ++i) {
    const float* row = logits.data<float>() + 3 * i;
    EXPECT_EQ(std::max_element(row, row + 3) - row, labels.data<int64_t>()[i]);
  }
}

// A model with every kind of state a checkpoint must carry: trainable
// weights, BatchNorm's moving statistics, Dropout's call count, Adam's slots.
std::unique_ptr<Sequential> StatefulModel() {
  auto model = std::make_unique<Sequential>();
  model->Add(std::make_unique<Dense>(4, 8, DenseOptions{.seed = 1}))
      .Add(std::make_unique<BatchNorm>(8))
      .Add(std::make_unique<ReLU>())
      .Add(std::make_unique<Dropout>(0.3f, 5))
      .Add(std::make_unique<Dense>(8, 3, DenseOptions{.seed = 2}));
  return model;
}

absl::StatusOr<float> TrainStep(Sequential& model, optimizers::Optimizer& opt, int step) {
  Tensor x = RandomTensor({6, 4}, 50 + step);
  Tensor labels = Tensor::FromVector<int64_t>({0, 1, 2, 2, 1, 0});
  autodiff::Tape tape;
  SLUICE_ASSIGN_OR_RETURN(Tensor logits, model.Forward(x, true));
  SLUICE_ASSIGN_OR_RETURN(Tensor per_example,
                          ops::SparseSoftmaxCrossEntropyWithLogits(logits, labels));
  SLUICE_ASSIGN_OR_RETURN(Tensor loss, ops::Mean(per_example));
  std::vector<autodiff::Variable*> vars = model.TrainableVariables();
  std::vector<Tensor> values;
  for (autodiff::Variable* v : vars) values.push_back(v->value());
  SLUICE_ASSIGN_OR_RETURN(auto grads, tape.Gradient(loss, values));
  SLUICE_RETURN_IF_ERROR(opt.Apply(grads, vars));
  return loss.scalar<float>();
}

TEST(SequentialTest, ResumingFromVariablesAndOptimizerStateRepeatsTheLosses) {
  auto uninterrupted = StatefulModel();
  optimizers::Adam adam({.learning_rate = 0.01f});
  std::vector<float> expected;
  for (int step = 0; step < 6; ++step) expected.push_back(*TrainStep(*uninterrupted, adam, step));

  // Three steps, then save what a checkpoint saves.
  auto first = StatefulModel();
  optimizers::Adam first_adam({.learning_rate = 0.01f});
  for (int step = 0; step < 3; ++step) {
    EXPECT_EQ(*TrainStep(*first, first_adam, step), expected[step]);
  }
  std::vector<Tensor> saved;
  for (autodiff::Variable* v : first->Variables()) saved.push_back(v->value().Clone());
  optimizers::OptimizerState state = *first_adam.SaveState(first->TrainableVariables());

  // A fresh process: new model and optimizer, restored, three more steps.
  auto resumed = StatefulModel();
  std::vector<autodiff::Variable*> vars = resumed->Variables();
  ASSERT_EQ(vars.size(), saved.size());
  for (size_t i = 0; i < vars.size(); ++i) ASSERT_TRUE(vars[i]->Assign(saved[i]).ok());
  optimizers::Adam resumed_adam({.learning_rate = 0.01f});
  ASSERT_TRUE(resumed_adam.RestoreState(state, resumed->TrainableVariables()).ok());
  for (int step = 3; step < 6; ++step) {
    EXPECT_EQ(*TrainStep(*resumed, resumed_adam, step), expected[step]) << step;
  }
}

}  // namespace
}  // namespace sluice::train::layers
