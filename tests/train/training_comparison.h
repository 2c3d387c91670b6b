// Compares two trainings bit for bit, wherever each ran (the guarded test device, a compiled
// step): the variables and the logs.
#ifndef SLUICE_TESTS_TRAIN_TRAINING_COMPARISON_H_
#define SLUICE_TESTS_TRAIN_TRAINING_COMPARISON_H_

#include <vector>

#include "core/tensor.h"
#include "gtest/gtest.h"
#include "train/backend/transfer.h"
#include "train/fit/trainer_options.h"
#include "train/layers/module.h"

namespace sluice::train::testing {

// Host copies of every variable of `model`, in order (from any device).
inline std::vector<Tensor> HostVariables(layers::Module& model) {
  std::vector<Tensor> out;
  for (autodiff::Variable* v : model.Variables()) {
    absl::StatusOr<Tensor> host = backend::CopyTo(v->mutable_value(), Device::Cpu());
    EXPECT_TRUE(host.ok()) << host.status();
    out.push_back(host.ok() ? *host : Tensor());
  }
  return out;
}

// The same variables bit for bit, wherever each model lives.
inline void ExpectSameVariables(layers::Module& a_model, layers::Module& b_model) {
  std::vector<Tensor> a = HostVariables(a_model), b = HostVariables(b_model);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i].Equals(b[i])) << "variable " << i << " (" << a_model.Variables()[i]->name()
                                   << "): " << a[i].DebugString(4) << " vs " << b[i].DebugString(4);
  }
}

// The same logs, but for the wall-clock ones (rates and time shares).
inline void ExpectSameHistory(const fit::History& a, const fit::History& b) {
  EXPECT_EQ(a.epochs, b.epochs);
  ASSERT_EQ(a.history.size(), b.history.size());
  for (const auto& [name, values] : a.history) {
    if (name == "images_per_second" || name == "input_wait_share") continue;
    ASSERT_TRUE(b.history.count(name)) << name;
    EXPECT_EQ(values, b.history.at(name)) << name;
  }
}

}  // namespace sluice::train::testing

#endif  // SLUICE_TESTS_TRAIN_TRAINING_COMPARISON_H_
