#ifndef SLUICE_TESTS_TRAIN_MODULE_GRADIENT_CHECK_H_
#define SLUICE_TESTS_TRAIN_MODULE_GRADIENT_CHECK_H_

// Finite-difference checks for Modules: gradient_check.h's method (the tape's
// gradient of sum(w * module(x)) against central differences in float64),
// with respect to the input and to every trainable variable, perturbed in
// place. The module must be deterministic for a given input (Dropout is not).

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/train/gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/layers/module.h"

namespace sluice::train::testing {

inline std::string CheckModuleGradients(layers::Module& module, const Tensor& input, bool training,
                                        GradientCheckOptions options = {}) {
  std::vector<autodiff::Variable*> vars = module.TrainableVariables();
  std::vector<std::optional<Tensor>> analytic;
  Tensor weights;
  {
    autodiff::Tape tape;
    tape.Watch(input);
    absl::StatusOr<Tensor> y = module.Forward(input, training);
    if (!y.ok()) return absl::StrCat("forward failed: ", y.status().ToString());
    std::vector<Tensor> sources = {input};
    for (autodiff::Variable* v : vars) sources.push_back(v->value());
    weights = RandomTensor(y->shape(), 1234, 0.5f, 1.5f);
    auto grads = tape.Gradient(*y, sources, weights);
    if (!grads.ok()) return absl::StrCat("Gradient failed: ", grads.status().ToString());
    analytic = *std::move(grads);
  }
  auto objective = [&](const Tensor& x) -> double {
    absl::StatusOr<Tensor> y = module.Forward(x, training);
    double s = 0;
    for (int64_t k = 0; k < y->num_elements(); ++k) {
      s += static_cast<double>(y->data<float>()[k]) * weights.data<float>()[k];
    }
    return s;
  };
  std::string errors;
  int reported = 0;
  auto check = [&](size_t source, const std::string& what, float* values, int64_t n,
                   const Tensor& x) {
    if (!analytic[source]) {
      errors += absl::StrCat(what, ": no gradient\n");
      return;
    }
    for (int64_t k = 0; k < n; ++k) {
      const float x0 = values[k];
      values[k] = static_cast<float>(x0 + options.epsilon);
      const double up = objective(x);
      values[k] = static_cast<float>(x0 - options.epsilon);
      const double down = objective(x);
      values[k] = x0;
      const double numeric = (up - down) / (2 * options.epsilon);
      const double got = analytic[source]->data<float>()[k];
      const double tol =
          options.absolute_tolerance + options.relative_tolerance * std::abs(numeric);
      if (std::abs(got - numeric) > tol && reported++ < 8) {
        errors += absl::StrCat(what, " element ", k, ": tape ", got, ", numeric ", numeric, "\n");
      }
    }
  };
  Tensor x = input.Clone();
  check(0, "input", x.data<float>(), x.num_elements(), x);
  for (size_t i = 0; i < vars.size(); ++i) {
    Tensor& value = vars[i]->mutable_value();
    check(i + 1, absl::StrCat("variable '", vars[i]->name(), "'"), value.data<float>(),
          value.num_elements(), x);
  }
  return errors;
}

}  // namespace sluice::train::testing

#endif  // SLUICE_TESTS_TRAIN_MODULE_GRADIENT_CHECK_H_
