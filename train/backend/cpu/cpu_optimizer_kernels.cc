// The CpuBackend's optimizer updates, SGD (with momentum, Nesterov and weight decay), Adam and
// Keras' RMSprop, Adagrad, Adadelta, Adamax and Nadam, each one pass over the weights and their
// slots, split across CpuThreads().

#include <cmath>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "absl/strings/string_view.h"
#include "core/status_macros.h"
#include "train/backend/cpu/cpu_backend.h"
#include "train/backend/cpu/cpu_kernel_util.h"

namespace sluice::train::backend::cpu {

namespace {
SLUICE_KERNEL_CLONES void SgdRun(float* w, const float* g, float* v, int64_t n, float lr, float mu,
                                 bool nesterov, float decay) {
  if (decay != 0) {
    for (int64_t i = 0; i < n; ++i) w[i] -= decay * w[i];
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

// Each of the loops below reads and writes every array once; `decay` (lr * weight_decay) is
// applied to w before the step, as Keras applies weight decay before update_step.
SLUICE_KERNEL_CLONES void RmspropRun(float* w, const float* g, float* v, float* a, float* b,
                                     int64_t n, float lr, float rho, float mu, float eps,
                                     float decay) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float vi = rho * v[i] + (1 - rho) * (gi * gi);
    v[i] = vi;
    float denominator = vi + eps;
    if (a != nullptr) {
      const float ai = rho * a[i] + (1 - rho) * gi;
      a[i] = ai;
      denominator = vi - ai * ai + eps;
    }
    const float step = lr * gi / std::sqrt(denominator);
    const float wi = w[i] - decay * w[i];
    if (b != nullptr) {
      const float bi = mu * b[i] + step;
      b[i] = bi;
      w[i] = wi - bi;
    } else {
      w[i] = wi - step;
    }
  }
}

SLUICE_KERNEL_CLONES void AdagradRun(float* w, const float* g, float* acc, int64_t n, float lr,
                                     float eps, float decay) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float ai = acc[i] + gi * gi;
    acc[i] = ai;
    w[i] = (w[i] - decay * w[i]) - lr * gi / std::sqrt(ai + eps);
  }
}

SLUICE_KERNEL_CLONES void AdadeltaRun(float* w, const float* g, float* acc_g, float* acc_d,
                                      int64_t n, float lr, float rho, float eps, float decay) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float ag = rho * acc_g[i] + (1 - rho) * (gi * gi);
    acc_g[i] = ag;
    const float delta = -(std::sqrt(acc_d[i] + eps) * gi) / std::sqrt(ag + eps);
    acc_d[i] = rho * acc_d[i] + (1 - rho) * (delta * delta);
    w[i] = (w[i] - decay * w[i]) + lr * delta;
  }
}

SLUICE_KERNEL_CLONES void AdamaxRun(float* w, const float* g, float* m, float* u, int64_t n,
                                    float alpha, float b1, float b2, float eps, float decay) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = m[i] + (gi - m[i]) * (1 - b1);
    // A NaN gradient reaches u and w (std::fmax would drop it), as on the GPU.
    const float scaled = b2 * u[i], magnitude = std::fabs(gi);
    const float ui = scaled > magnitude ? scaled : magnitude;
    m[i] = mi;
    u[i] = ui;
    w[i] = (w[i] - decay * w[i]) - alpha * mi / (ui + eps);
  }
}

SLUICE_KERNEL_CLONES void NadamRun(float* w, const float* g, float* m, float* v, int64_t n,
                                   float cm, float cg, float v_scale, float b1, float b2, float eps,
                                   float decay) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = m[i] + (gi - m[i]) * (1 - b1);
    const float vi = v[i] + (gi * gi - v[i]) * (1 - b2);
    m[i] = mi;
    v[i] = vi;
    w[i] = (w[i] - decay * w[i]) - (cm * mi + cg * gi) / (std::sqrt(v_scale * vi) + eps);
  }
}

// Where a gradient stays 0 (the weights of a ReLU unit that never fires), the optimizer's slots
// decay geometrically (Adam's first moment by 0.9 a step) into float32's denormals within a few
// hundred steps. x86 computes on denormal operands in microcode: Adam's loop ran 53x slower over
// denormal moments (3.1 against 164 ms per million elements, Intel Xeon). So each update runs
// with MXCSR's flush-to-zero and denormals-are-zero set, as TensorFlow's CPU kernels do, and the
// thread's own mode comes back after it. A denormal slot reads as 0; nothing else changes.
class ScopedFlushDenormals {
 public:
#if defined(__x86_64__)
  ScopedFlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFtz | kDaz); }
  ~ScopedFlushDenormals() { _mm_setcsr(saved_); }

 private:
  static constexpr unsigned kFtz = 0x8000, kDaz = 0x0040;
  unsigned saved_;
#endif
};

template <typename Fn>
void UpdateElementwise(int64_t n, const Fn& fn) {
  Elementwise(n, [&](int64_t begin, int64_t end) {
    ScopedFlushDenormals flush;
    fn(begin, end);
  });
}

// The step's scalars (backend.h's StepScalar), read when the update runs: a replayed update reads
// the values written for its own step.
struct Step {
  float rate, decay, gradient_coefficient, v_scale;
};
absl::StatusOr<Step> ReadStep(absl::string_view op, const Tensor& step, const Tensor& w) {
  SLUICE_RETURN_IF_ERROR(CheckStepScalars(op, step, w));
  const float* s = step.data<float>();
  return Step{s[kStepRate], s[kStepDecay], s[kStepGradientCoefficient], s[kStepVScale]};
}

}  // namespace

absl::Status CpuBackend::SgdUpdate(Tensor& w, const Tensor& g, Tensor* velocity, const Tensor& step,
                                   float momentum, bool nesterov) {
  SLUICE_ASSIGN_OR_RETURN(const Step s, ReadStep("SgdUpdate", step, w));
  float* pw = w.data<float>();
  const float* pg = g.data<float>();
  float* pv = momentum != 0 && velocity != nullptr ? velocity->data<float>() : nullptr;
  if (momentum != 0 && pv == nullptr) {
    return absl::InvalidArgumentError("SgdUpdate: momentum needs a velocity tensor");
  }
  UpdateElementwise(w.num_elements(), [&](int64_t b, int64_t e) {
    SgdRun(pw + b, pg + b, pv ? pv + b : nullptr, e - b, s.rate, momentum, nesterov, s.decay);
  });
  return absl::OkStatus();
}

absl::Status CpuBackend::AdamUpdate(Tensor& w, const Tensor& g, Tensor& m, Tensor& v,
                                    const Tensor& step, float beta_1, float beta_2, float epsilon) {
  SLUICE_ASSIGN_OR_RETURN(const Step s, ReadStep("AdamUpdate", step, w));
  float* pw = w.data<float>();
  const float* pg = g.data<float>();
  float* pm = m.data<float>();
  float* pv = v.data<float>();
  UpdateElementwise(w.num_elements(), [&](int64_t b, int64_t e) {
    AdamRun(pw + b, pg + b, pm + b, pv + b, e - b, s.rate, beta_1, beta_2, epsilon, s.decay);
  });
  return absl::OkStatus();
}

absl::Status CpuBackend::RmspropUpdate(Tensor& w, const Tensor& g, Tensor& velocity,
                                       Tensor* average_gradient, Tensor* momentum_slot,
                                       const Tensor& step, float rho, float momentum,
                                       float epsilon) {
  SLUICE_ASSIGN_OR_RETURN(const Step s, ReadStep("RmspropUpdate", step, w));
  if (momentum != 0 && momentum_slot == nullptr) {
    return absl::InvalidArgumentError("RmspropUpdate: momentum needs a momentum tensor");
  }
  float* pw = w.data<float>();
  const float* pg = g.data<float>();
  float* pv = velocity.data<float>();
  float* pa = average_gradient != nullptr ? average_gradient->data<float>() : nullptr;
  float* pb = momentum != 0 ? momentum_slot->data<float>() : nullptr;
  UpdateElementwise(w.num_elements(), [&](int64_t b, int64_t e) {
    RmspropRun(pw + b, pg + b, pv + b, pa ? pa + b : nullptr, pb ? pb + b : nullptr, e - b, s.rate,
               rho, momentum, epsilon, s.decay);
  });
  return absl::OkStatus();
}

absl::Status CpuBackend::AdagradUpdate(Tensor& w, const Tensor& g, Tensor& accumulator,
                                       const Tensor& step, float epsilon) {
  SLUICE_ASSIGN_OR_RETURN(const Step s, ReadStep("AdagradUpdate", step, w));
  float* pw = w.data<float>();
  const float* pg = g.data<float>();
  float* pa = accumulator.data<float>();
  UpdateElementwise(w.num_elements(), [&](int64_t b, int64_t e) {
    AdagradRun(pw + b, pg + b, pa + b, e - b, s.rate, epsilon, s.decay);
  });
  return absl::OkStatus();
}

absl::Status CpuBackend::AdadeltaUpdate(Tensor& w, const Tensor& g, Tensor& accumulated_grad,
                                        Tensor& accumulated_delta, const Tensor& step, float rho,
                                        float epsilon) {
  SLUICE_ASSIGN_OR_RETURN(const Step s, ReadStep("AdadeltaUpdate", step, w));
  float* pw = w.data<float>();
  const float* pg = g.data<float>();
  float* pa = accumulated_grad.data<float>();
  float* pd = accumulated_delta.data<float>();
  UpdateElementwise(w.num_elements(), [&](int64_t b, int64_t e) {
    AdadeltaRun(pw + b, pg + b, pa + b, pd + b, e - b, s.rate, rho, epsilon, s.decay);
  });
  return absl::OkStatus();
}

absl::Status CpuBackend::AdamaxUpdate(Tensor& w, const Tensor& g, Tensor& m, Tensor& u,
                                      const Tensor& step, float beta_1, float beta_2,
                                      float epsilon) {
  SLUICE_ASSIGN_OR_RETURN(const Step s, ReadStep("AdamaxUpdate", step, w));
  float* pw = w.data<float>();
  const float* pg = g.data<float>();
  float* pm = m.data<float>();
  float* pu = u.data<float>();
  UpdateElementwise(w.num_elements(), [&](int64_t b, int64_t e) {
    AdamaxRun(pw + b, pg + b, pm + b, pu + b, e - b, s.rate, beta_1, beta_2, epsilon, s.decay);
  });
  return absl::OkStatus();
}

absl::Status CpuBackend::NadamUpdate(Tensor& w, const Tensor& g, Tensor& m, Tensor& v,
                                     const Tensor& step, float beta_1, float beta_2,
                                     float epsilon) {
  SLUICE_ASSIGN_OR_RETURN(const Step s, ReadStep("NadamUpdate", step, w));
  float* pw = w.data<float>();
  const float* pg = g.data<float>();
  float* pm = m.data<float>();
  float* pv = v.data<float>();
  UpdateElementwise(w.num_elements(), [&](int64_t b, int64_t e) {
    NadamRun(pw + b, pg + b, pm + b, pv + b, e - b, s.rate, s.gradient_coefficient, s.v_scale,
             beta_1, beta_2, epsilon, s.decay);
  });
  return absl::OkStatus();
}

}  // namespace sluice::train::backend::cpu
