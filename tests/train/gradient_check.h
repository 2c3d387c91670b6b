#ifndef SLUICE_TESTS_TRAIN_GRADIENT_CHECK_H_
#define SLUICE_TESTS_TRAIN_GRADIENT_CHECK_H_

// A finite-difference gradient checker used by every op test: the tape's
// gradient of sum(w * f(inputs)), with fixed random weights w so that every
// output element matters differently, against central differences of the
// same scalar, accumulated in float64.

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/tensor.h"
#include "train/autodiff/tape.h"
#include "train/autodiff/variable.h"

namespace sluice::train::testing {

// A float32 tensor of `shape` with values uniform in [lo, hi), seeded.
inline Tensor RandomTensor(Shape shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(DType::kFloat32, std::move(shape));
  std::mt19937 rng(seed);
  for (float& v : t.flat<float>()) {
    v = lo + (hi - lo) * static_cast<float>(rng() >> 8) / static_cast<float>(1u << 24);
  }
  return t;
}

struct GradientCheckOptions {
  double epsilon = 1e-3;
  double relative_tolerance = 1e-2;
  double absolute_tolerance = 1e-3;
  // Inputs (by index) not to check, such as integer labels.
  std::vector<int> skip = {};
};

using OpFn = std::function<absl::StatusOr<Tensor>(const std::vector<Tensor>&)>;

// Empty when analytic and numeric gradients agree for every float32 input not
// skipped; otherwise a description of the first mismatches.
[[nodiscard]] inline std::string CheckGradients(const OpFn& f, std::vector<Tensor> inputs,
                                                GradientCheckOptions options = {}) {
  auto skipped = [&](int i) {
    if (inputs[i].dtype() != DType::kFloat32) return true;
    for (int s : options.skip) {
      if (s == i) return true;
    }
    return false;
  };
  std::vector<std::optional<Tensor>> analytic;
  Tensor weights;
  {
    autodiff::Tape tape;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!skipped(static_cast<int>(i))) tape.Watch(inputs[i]);
    }
    absl::StatusOr<Tensor> y = f(inputs);
    if (!y.ok()) return absl::StrCat("forward failed: ", y.status().ToString());
    weights = RandomTensor(y->shape(), 1234, 0.5f, 1.5f);
    auto grads = tape.Gradient(*y, inputs, weights);
    if (!grads.ok()) return absl::StrCat("Gradient failed: ", grads.status().ToString());
    analytic = *std::move(grads);
  }
  auto objective = [&](const std::vector<Tensor>& in) -> double {
    absl::StatusOr<Tensor> y = f(in);
    double s = 0;
    for (int64_t k = 0; k < y->num_elements(); ++k) {
      s += static_cast<double>(y->data<float>()[k]) * weights.data<float>()[k];
    }
    return s;
  };
  std::string errors;
  int reported = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (skipped(static_cast<int>(i))) continue;
    if (!analytic[i]) {
      errors += absl::StrCat("input ", i, ": no gradient\n");
      continue;
    }
    for (int64_t k = 0; k < inputs[i].num_elements(); ++k) {
      std::vector<Tensor> in = inputs;
      in[i] = inputs[i].Clone();
      float* p = in[i].data<float>() + k;
      const float x0 = *p;
      *p = static_cast<float>(x0 + options.epsilon);
      const double up = objective(in);
      *p = static_cast<float>(x0 - options.epsilon);
      const double down = objective(in);
      const double numeric = (up - down) / (2 * options.epsilon);
      const double got = analytic[i]->data<float>()[k];
      const double tol =
          options.absolute_tolerance + options.relative_tolerance * std::abs(numeric);
      if (std::abs(got - numeric) > tol && reported++ < 8) {
        errors +=
            absl::StrCat("input ", i, " element ", k, ": tape ", got, ", numeric ", numeric, "\n");
      }
    }
  }
  return errors;
}

// The values of a float32 tensor, for EXPECT_THAT(..., ElementsAre(...)).
// The names of `vars`, in order.
inline std::vector<std::string> Names(const std::vector<autodiff::Variable*>& vars) {
  std::vector<std::string> names;
  for (autodiff::Variable* v : vars) names.push_back(v->name());
  return names;
}

inline std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.num_elements());
}

inline Tensor T(std::vector<float> values, Shape shape) {
  return *Tensor::FromVector(values, std::move(shape));
}

}  // namespace sluice::train::testing

#endif  // SLUICE_TESTS_TRAIN_GRADIENT_CHECK_H_
