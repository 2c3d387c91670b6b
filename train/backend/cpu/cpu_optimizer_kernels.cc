// The CpuBackend's optimizer updates, SGD (with momentum, Nesterov and weight decay), Adam and
// Keras' RMSprop, Adagrad, Adadelta, Adamax and Nadam, each one pass over the weights and their
// slots, split across CpuThreads(), over all of a call's variables at once.

#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "absl/strings/str_cat.h"
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

// Updates elements [begin, end) of `var` by `rule`, with the step's scalars `s`
// (backend.h's StepScalar) read when the update runs: a replayed update reads the values
// written for its own step.
void RunRule(const UpdateRule& rule, const float* s, const UpdateOperands& var, int64_t begin,
             int64_t end) {
  float* w = var.w->data<float>() + begin;
  const float* g = var.g->data<float>() + begin;
  auto slot = [&](int j) {
    return var.slots[j] != nullptr ? var.slots[j]->data<float>() + begin : nullptr;
  };
  const int64_t n = end - begin;
  const float rate = s[kStepRate], decay = s[kStepDecay];
  switch (rule.kind) {
    case UpdateKind::kSgd:
      return SgdRun(w, g, slot(0), n, rate, rule.momentum, rule.nesterov, decay);
    case UpdateKind::kAdam:
      return AdamRun(w, g, slot(0), slot(1), n, rate, rule.beta_1, rule.beta_2, rule.epsilon,
                     decay);
    case UpdateKind::kRmsprop:
      return RmspropRun(w, g, slot(0), slot(1), slot(2), n, rate, rule.rho, rule.momentum,
                        rule.epsilon, decay);
    case UpdateKind::kAdagrad:
      return AdagradRun(w, g, slot(0), n, rate, rule.epsilon, decay);
    case UpdateKind::kAdadelta:
      return AdadeltaRun(w, g, slot(0), slot(1), n, rate, rule.rho, rule.epsilon, decay);
    case UpdateKind::kAdamax:
      return AdamaxRun(w, g, slot(0), slot(1), n, rate, rule.beta_1, rule.beta_2, rule.epsilon,
                       decay);
    case UpdateKind::kNadam:
      return NadamRun(w, g, slot(0), slot(1), n, rate, s[kStepGradientCoefficient], s[kStepVScale],
                      rule.beta_1, rule.beta_2, rule.epsilon, decay);
  }
}

}  // namespace

// All the variables' elements are one index space split across CpuThreads(): a model's many
// small variables (resnet-20: 65, most under 64K elements, each too small to split alone) are
// updated in parallel, and a pass costs one dispatch, not one per variable.
absl::Status CpuBackend::OptimizerUpdate(const UpdateRule& rule,
                                         absl::Span<const UpdateOperands> vars,
                                         const Tensor& step) {
  SLUICE_RETURN_IF_ERROR(CheckUpdate(rule, vars, step));
  if (!step.device().is_cpu()) {
    return absl::InvalidArgumentError(absl::StrCat("CpuBackend::", UpdateName(rule.kind),
                                                   ": the tensors are on ",
                                                   step.device().DebugString()));
  }
  const float* s = step.data<float>();
  std::vector<int64_t> starts(vars.size() + 1, 0);  // var i's elements are [starts[i], starts[i+1])
  for (size_t i = 0; i < vars.size(); ++i) starts[i + 1] = starts[i] + vars[i].w->num_elements();
  UpdateElementwise(starts.back(), [&](int64_t begin, int64_t end) {
    size_t i = std::upper_bound(starts.begin(), starts.end(), begin) - starts.begin() - 1;
    for (; i < vars.size() && starts[i] < end; ++i) {
      const int64_t lo = std::max(begin, starts[i]), hi = std::min(end, starts[i + 1]);
      if (lo < hi) RunRule(rule, s, vars[i], lo - starts[i], hi - starts[i]);
    }
  });
  return absl::OkStatus();
}

}  // namespace sluice::train::backend::cpu
