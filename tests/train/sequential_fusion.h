#ifndef SLUICE_TESTS_TRAIN_SEQUENTIAL_FUSION_H_
#define SLUICE_TESTS_TRAIN_SEQUENTIAL_FUSION_H_

// Helpers for the tests of Sequential's fusions (a layer and the ReLU after it as one op): the
// same layers fused and apart, and what to compare between them.
#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

#include "train/autodiff/tape.h"
#include "train/layers/sequential.h"
#include "train/ops/arithmetic.h"
#include "train/ops/reduce.h"

namespace sluice::train::testing {

// `layers` in one Sequential (where it fuses a layer with a plain ReLU after it), or, `apart`,
// each in a Sequential of its own inside it (where nothing fuses).
inline std::unique_ptr<layers::Sequential> SequentialOf(
    std::vector<std::unique_ptr<layers::Module>> layers, bool apart) {
  auto model = std::make_unique<layers::Sequential>();
  for (std::unique_ptr<layers::Module>& m : layers) {
    if (!apart) {
      model->Add(std::move(m));
      continue;
    }
    auto wrapped = std::make_unique<layers::Sequential>();
    wrapped->Add(std::move(m));
    model->Add(std::move(wrapped));
  }
  return model;
}

// The model's training output on `x`, then the gradients of sum(w * output) for each of its
// variables that gets one.
inline std::vector<Tensor> OutputAndGradients(layers::Sequential& model, const Tensor& x,
                                              const Tensor& w) {
  autodiff::Tape tape;
  absl::StatusOr<Tensor> y = model.Forward(x, true);
  EXPECT_TRUE(y.ok()) << y.status();
  if (!y.ok()) return {};
  auto g = tape.Gradient(*ops::Sum(*ops::Mul(*y, w)), model.Variables());
  EXPECT_TRUE(g.ok()) << g.status();
  std::vector<Tensor> out = {*y};
  if (!g.ok()) return out;
  for (const auto& t : *g) {
    if (t) out.push_back(*t);
  }
  return out;
}

}  // namespace sluice::train::testing

#endif  // SLUICE_TESTS_TRAIN_SEQUENTIAL_FUSION_H_
