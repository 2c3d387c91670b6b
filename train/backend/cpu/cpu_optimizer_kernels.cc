// The CpuBackend's optimizer updates, SGD (with momentum, Nesterov and weight decay) and Adam,
// each one pass over the weights and their slots, split across CpuThreads().

#include <cmath>

#include "train/backend/cpu/cpu_backend.h"
#include "train/backend/cpu/cpu_kernel_util.h"

namespace sluice::train::backend::cpu {

namespace {
SLUICE_KERNEL_CLONES void SgdRun(float* w, const float* g, float* v, int64_t n, float lr, float mu,
                                 bool nesterov, float decay) {
  if (decay != 0) {
    for (int64_t i = 0; i < n; ++i) w[i] -= lr * decay * w[i];
  }
  if (v == nullptr) {
    for (int64_t i = 0; i < n; ++i) w[i] -= lr * g[i];
  } else if (nesterov) {
    for (int64_t i = 0; i < n; ++i) {
      v[i] = mu * v[i] - lr * g[i];
      w[i] += mu * v[i] - lr * g[i];
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      v[i] = mu * v[i] - lr * g[i];
      w[i] += v[i];
    }
  }
}

SLUICE_KERNEL_CLONES void AdamRun(float* w, const float* g, float* m, float* v, int64_t n,
                                  float alpha, float b1, float b2, float eps, float decay) {
  if (decay != 0) {
    for (int64_t i = 0; i < n; ++i) w[i] -= decay * w[i];
  }
  for (int64_t i = 0; i < n; ++i) {
    m[i] += (g[i] - m[i]) * (1 - b1);
    v[i] += (g[i] * g[i] - v[i]) * (1 - b2);
    w[i] -= alpha * m[i] / (std::sqrt(v[i]) + eps);
  }
}
}  // namespace

absl::Status CpuBackend::SgdUpdate(Tensor& w, const Tensor& g, Tensor* velocity, float lr,
                                   float momentum, bool nesterov, float weight_decay) {
  float* pw = w.data<float>();
  const float* pg = g.data<float>();
  float* pv = momentum != 0 && velocity != nullptr ? velocity->data<float>() : nullptr;
  if (momentum != 0 && pv == nullptr) {
    return absl::InvalidArgumentError("SgdUpdate: momentum needs a velocity tensor");
  }
  Elementwise(w.num_elements(), [&](int64_t b, int64_t e) {
    SgdRun(pw + b, pg + b, pv ? pv + b : nullptr, e - b, lr, momentum, nesterov, weight_decay);
  });
  return absl::OkStatus();
}

absl::Status CpuBackend::AdamUpdate(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, float alpha,
                                    float beta_1, float beta_2, float epsilon, float decay) {
  float* pw = w.data<float>();
  const float* pg = g.data<float>();
  float* pm = m.data<float>();
  float* pv = v.data<float>();
  Elementwise(w.num_elements(), [&](int64_t b, int64_t e) {
    AdamRun(pw + b, pg + b, pm + b, pv + b, e - b, alpha, beta_1, beta_2, epsilon, decay);
  });
  return absl::OkStatus();
}

}  // namespace sluice::train::backend::cpu
