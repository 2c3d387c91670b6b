#include "train/adam.h"

#include <cmath>

namespace sluice::train {

Adam::Adam(AdamOptions options) : Optimizer(options.learning_rate, {"m", "v"}), options_(options) {}

void Adam::Update(Variable& var, const Tensor& grad, int64_t step, float lr) {
  const double t = static_cast<double>(step);
  const float alpha = static_cast<float>(lr * std::sqrt(1 - std::pow(options_.beta_2, t)) /
                                         (1 - std::pow(options_.beta_1, t)));
  float* w = var.mutable_value().data<float>();
  float* m = Slot(var, 0).data<float>();
  float* v = Slot(var, 1).data<float>();
  const float* g = grad.data<float>();
  const int64_t n = grad.num_elements();
  if (options_.weight_decay != 0 && DecaysWeightsOf(var)) {
    for (int64_t i = 0; i < n; ++i) w[i] -= lr * options_.weight_decay * w[i];
  }
  for (int64_t i = 0; i < n; ++i) {
    m[i] += (g[i] - m[i]) * (1 - options_.beta_1);
    v[i] += (g[i] * g[i] - v[i]) * (1 - options_.beta_2);
    w[i] -= alpha * m[i] / (std::sqrt(v[i]) + options_.epsilon);
  }
}

}  // namespace sluice::train
