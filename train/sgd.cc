#include "train/sgd.h"

namespace sluice::train {

void Sgd::Update(Variable& var, const Tensor& grad, int64_t) {
  float* w = var.mutable_value().data<float>();
  const float* g = grad.data<float>();
  const int64_t n = grad.num_elements();
  const float lr = options_.learning_rate, mu = options_.momentum;
  if (options_.weight_decay != 0) {
    for (int64_t i = 0; i < n; ++i) w[i] -= lr * options_.weight_decay * w[i];
  }
  if (mu == 0) {
    for (int64_t i = 0; i < n; ++i) w[i] -= lr * g[i];
    return;
  }
  auto it = velocity_.find(&var);
  if (it == velocity_.end()) {
    it = velocity_.emplace(&var, Tensor::Zeros(DType::kFloat32, var.shape())).first;
  }
  float* v = it->second.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    v[i] = mu * v[i] - lr * g[i];
    w[i] += options_.nesterov ? mu * v[i] - lr * g[i] : v[i];
  }
}

}  // namespace sluice::train
