#ifndef SLUICE_TESTS_TRAIN_LAYERS_OVERFIT_TEST_UTIL_H_
#define SLUICE_TESTS_TRAIN_LAYERS_OVERFIT_TEST_UTIL_H_

// A container's end-to-end check: a small model trained with Adam on one fixed batch of 8
// examples of 3 classes must fit it (the containers' tests: Sequential, the functional Model).

#include <gtest/gtest.h>

#include <vector>

#include "tests/train/gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/layers/module.h"
#include "train/ops/cross_entropy.h"
#include "train/ops/reduce.h"
#include "train/optimizers/adam.h"

namespace sluice::train::layers::testing {

// The batch: 8 random inputs of 4 features, labels 0, 1, 2, 0, 1, 2, 0, 1.
inline Tensor OverfitInputs() { return train::testing::RandomTensor({8, 4}, 11); }
inline Tensor OverfitLabels() { return Tensor::FromVector<int64_t>({0, 1, 2, 0, 1, 2, 0, 1}); }

// Trains `model` (4 features in, 3 logits out) for `steps` Adam steps at 0.05 on the batch, and
// expects the loss to start near ln 3 and end below 0.02.
inline void ExpectOverfitsOneBatch(Module& model, int steps) {
  const Tensor x = OverfitInputs(), labels = OverfitLabels();
  optimizers::Adam adam({.learning_rate = 0.05f});
  float first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    autodiff::Tape tape;
    Tensor logits = *model.Forward(x, true);
    Tensor loss = *ops::Mean(*ops::SparseSoftmaxCrossEntropyWithLogits(logits, labels));
    if (step == 0) first = loss.scalar<float>();
    last = loss.scalar<float>();
    std::vector<autodiff::Variable*> vars = model.TrainableVariables();
    std::vector<Tensor> values;
    for (autodiff::Variable* v : vars) values.push_back(v->value());
    auto grads = *tape.Gradient(loss, values);
    for (const auto& g : grads) ASSERT_TRUE(g);
    ASSERT_TRUE(adam.Apply(grads, vars).ok());
  }
  EXPECT_GT(first, 0.8f);  // about ln 3 at the start
  EXPECT_LT(last, 0.02f);
}

}  // namespace sluice::train::layers::testing

#endif  // SLUICE_TESTS_TRAIN_LAYERS_OVERFIT_TEST_UTIL_H_
