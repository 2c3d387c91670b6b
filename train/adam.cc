#include "train/adam.h"

#include <cmath>

namespace sluice::train {

void Adam::Update(Variable& var, const Tensor& grad, int64_t step) {
  auto it = slots_.find(&var);
  if (it == slots_.end()) {
    it = slots_
             .emplace(&var, Slots{Tensor::Zeros(DType::kFloat32, var.shape()),
                                  Tensor::Zeros(DType::kFloat32, var.shape())})
             .first;
  }
  const double t = static_cast<double>(step);
  const float alpha =
      static_cast<float>(options_.learning_rate * std::sqrt(1 - std::pow(options_.beta_2, t)) /
                         (1 - std::pow(options_.beta_1, t)));
  float* w = var.mutable_value().data<float>();
  float* m = it->second.m.data<float>();
  float* v = it->second.v.data<float>();
  const float* g = grad.data<float>();
  for (int64_t i = 0; i < grad.num_elements(); ++i) {
    m[i] += (g[i] - m[i]) * (1 - options_.beta_1);
    v[i] += (g[i] * g[i] - v[i]) * (1 - options_.beta_2);
    w[i] -= alpha * m[i] / (std::sqrt(v[i]) + options_.epsilon);
  }
}

}  // namespace sluice::train
