#include "train/sgd.h"

namespace sluice::train {

Sgd::Sgd(SgdOptions options)
    : Optimizer(options.learning_rate, options.momentum == 0
                                           ? std::vector<std::string>{}
                                           : std::vector<std::string>{"velocity"}),
      options_(options) {}

void Sgd::Update(Variable& var, const Tensor& grad, int64_t, float lr) {
  float* w = var.mutable_value().data<float>();
  const float* g = grad.data<float>();
  const int64_t n = grad.num_elements();
  const float mu = options_.momentum;
  if (options_.weight_decay != 0 && DecaysWeightsOf(var)) {
    for (int64_t i = 0; i < n; ++i) w[i] -= lr * options_.weight_decay * w[i];
  }
  if (mu == 0) {
    for (int64_t i = 0; i < n; ++i) w[i] -= lr * g[i];
    return;
  }
  float* v = Slot(var, 0).data<float>();
  for (int64_t i = 0; i < n; ++i) {
    v[i] = mu * v[i] - lr * g[i];
    w[i] += options_.nesterov ? mu * v[i] - lr * g[i] : v[i];
  }
}

}  // namespace sluice::train
