// The CpuBackend's elementwise kernels: binary ops with broadcasting and their gradients, unary
// ops and theirs, fill, axpby, dropout and casts. Each splits its outermost loop across
// CpuThreads() (ParallelFor) and keeps the innermost loop contiguous with compile-time strides
// so that the compiler vectorises it.

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/float16.h"
#include "core/status_macros.h"
#include "train/backend/broadcast.h"
#include "train/backend/cpu/bfloat16_convert.h"
#include "train/backend/cpu/cpu_backend.h"
#include "train/backend/cpu/cpu_kernel_util.h"
#include "train/backend/cpu/cpu_threads.h"
#include "train/backend/dropout_draw.h"

namespace sluice::train::backend::cpu {
namespace {

// z[i] = f(x[i * SA], y[i * SB]) with the strides known at compile time so
// that each variant vectorises.
// Whether kMaximum (kMinimum) picks x: on ties and when x is NaN, so that a NaN in either operand
// comes through (x != x is NaN's test, which vectorises).
inline bool PicksA(bool maximum, float x, float y) { return (maximum ? x >= y : x <= y) || x != x; }

template <BinaryOp kOp>
inline float Apply(float x, float y) {
  if constexpr (kOp == BinaryOp::kAdd) return x + y;
  if constexpr (kOp == BinaryOp::kSub) return x - y;
  if constexpr (kOp == BinaryOp::kMul) return x * y;
  if constexpr (kOp == BinaryOp::kDiv) return x / y;
  if constexpr (kOp == BinaryOp::kMaximum) return PicksA(true, x, y) ? x : y;
  if constexpr (kOp == BinaryOp::kMinimum) return PicksA(false, x, y) ? x : y;
  if constexpr (kOp == BinaryOp::kEqual) return x == y ? 1.0f : 0.0f;
  return x > y ? 1.0f : 0.0f;  // kGreater
}

template <BinaryOp kOp>
SLUICE_KERNEL_CLONES void BinaryRunSame(const float* x, const float* y, float* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = Apply<kOp>(x[i], y[i]);
}
template <BinaryOp kOp>
SLUICE_KERNEL_CLONES void BinaryRunScalarB(const float* x, float y, float* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = Apply<kOp>(x[i], y);
}
template <BinaryOp kOp>
SLUICE_KERNEL_CLONES void BinaryRunScalarA(float x, const float* y, float* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = Apply<kOp>(x, y[i]);
}

template <BinaryOp kOp>
void BinaryKernel(const StridedPlan& plan, const float* x, const float* y, float* z) {
  ForEachRun(plan, [&](int64_t o, int64_t pa, int64_t pb, int64_t n, int64_t ia, int64_t ib) {
    if (ia == 1 && ib == 1) {
      BinaryRunSame<kOp>(x + pa, y + pb, z + o, n);
    } else if (ia == 1 && ib == 0) {
      BinaryRunScalarB<kOp>(x + pa, y[pb], z + o, n);
    } else if (ia == 0 && ib == 1) {
      BinaryRunScalarA<kOp>(x[pa], y + pb, z + o, n);
    } else {
      for (int64_t i = 0; i < n; ++i) z[o + i] = Apply<kOp>(x[pa + i * ia], y[pb + i * ib]);
    }
  });
}

// --- unary ---------------------------------------------------------------------

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// log(1 + e^x) = log1p(e^-|x|) + max(x, 0): e^-|x| <= 1 never overflows, and log1p keeps the
// small values of large negative x.
inline float Softplus(float x) { return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0f); }

SLUICE_KERNEL_CLONES void ReluRun(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = ReluOf(x[i]);
}
// From relu's output: y > 0 exactly where x > 0.
SLUICE_KERNEL_CLONES void ReluGradRun(const float* y, const float* g, float* gx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gx[i] = y[i] > 0 ? g[i] : 0.0f;
}

}  // namespace

namespace {

// Tiles of a float32 or bfloat16 tensor, widened to float32 and written back, so that the
// arithmetic of the mixed-type kernels below is one float32 loop that vectorises.
constexpr int64_t kTile = 512;

const float* Widen(const Tensor& t, int64_t at, int64_t n, float* tile) {
  if (t.dtype() == DType::kFloat32) return t.data<float>() + at;
  BFloat16ToFloatRun(static_cast<const uint16_t*>(t.raw_data()) + at, tile, n);
  return tile;
}

void Narrow(const float* tile, Tensor& t, int64_t at, int64_t n) {
  if (t.dtype() == DType::kFloat32) {
    std::copy(tile, tile + n, t.data<float>() + at);
  } else {
    FloatToBFloat16Run(tile, static_cast<uint16_t*>(t.raw_data()) + at, n);
  }
}

absl::Status FloatOrBFloat16(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Shape& shape = (*tensors.begin())->shape();
  for (const Tensor* t : tensors) {
    if ((t->dtype() != DType::kFloat32 && t->dtype() != DType::kBFloat16) || t->shape() != shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": want float32 or bfloat16 tensors of ", "one shape, got ", DTypeName(t->dtype()),
          t->shape().DebugString(), " beside ", shape.DebugString()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CpuBackend::Fill(Tensor& t, float value) {
  float* p = t.data<float>();
  Elementwise(t.num_elements(), [&](int64_t b, int64_t e) { std::fill(p + b, p + e, value); });
  return absl::OkStatus();
}

namespace {
SLUICE_KERNEL_CLONES void AxpbyRun(float alpha, const float* x, float beta, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i] + beta * y[i];
}
}  // namespace

absl::Status CpuBackend::Axpby(float alpha, const Tensor& x, float beta, Tensor& y) {
  SLUICE_RETURN_IF_ERROR(FloatOrBFloat16("Axpby", {&y, &x}));
  if (x.dtype() == DType::kBFloat16 || y.dtype() == DType::kBFloat16) {
    // Gradients of bfloat16 activations (mixed_bfloat16) summed in float32, rounded once.
    Elementwise(y.num_elements(), [&](int64_t begin, int64_t end) {
      float tx[kTile], ty[kTile];
      for (int64_t at = begin; at < end; at += kTile) {
        const int64_t n = std::min(kTile, end - at);
        const float* wx = Widen(x, at, n, tx);
        const float* wy = Widen(y, at, n, ty);
        if (wy != ty) std::copy(wy, wy + n, ty);
        AxpbyRun(alpha, wx, beta, ty, n);
        Narrow(ty, y, at, n);
      }
    });
    return absl::OkStatus();
  }
  const float* px = x.data<float>();
  float* py = y.data<float>();
  Elementwise(y.num_elements(),
              [&](int64_t b, int64_t e) { AxpbyRun(alpha, px + b, beta, py + b, e - b); });
  return absl::OkStatus();
}

absl::Status CpuBackend::Binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  const StridedPlan plan = MakePlan(out.shape(), BroadcastStrides(a.shape(), out.shape()),
                                    BroadcastStrides(b.shape(), out.shape()));
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  float* z = out.data<float>();
  if (out.num_elements() == 0) return absl::OkStatus();
  switch (op) {
    case BinaryOp::kAdd:
      BinaryKernel<BinaryOp::kAdd>(plan, x, y, z);
      break;
    case BinaryOp::kSub:
      BinaryKernel<BinaryOp::kSub>(plan, x, y, z);
      break;
    case BinaryOp::kMul:
      BinaryKernel<BinaryOp::kMul>(plan, x, y, z);
      break;
    case BinaryOp::kDiv:
      BinaryKernel<BinaryOp::kDiv>(plan, x, y, z);
      break;
    case BinaryOp::kMaximum:
      BinaryKernel<BinaryOp::kMaximum>(plan, x, y, z);
      break;
    case BinaryOp::kMinimum:
      BinaryKernel<BinaryOp::kMinimum>(plan, x, y, z);
      break;
    case BinaryOp::kEqual:
      BinaryKernel<BinaryOp::kEqual>(plan, x, y, z);
      break;
    case BinaryOp::kGreater:
      BinaryKernel<BinaryOp::kGreater>(plan, x, y, z);
      break;
  }
  return absl::OkStatus();
}

namespace {

// The gradients of kMaximum (kMinimum).
absl::Status SelectBackward(bool maximum, const Tensor& a, const Tensor& b, const Tensor& grad_out,
                            Tensor* grad_a, Tensor* grad_b) {
  // g goes to the operand the forward picked, in out's shape, then summed down to the operand.
  const Shape& shape = grad_out.shape();
  auto target = [&](Tensor* grad) -> Tensor {
    if (grad == nullptr) return Tensor();
    return grad->shape() == shape ? *grad : Tensor(DType::kFloat32, shape);
  };
  Tensor full_a = target(grad_a), full_b = target(grad_b);
  float* ga = grad_a != nullptr ? full_a.data<float>() : nullptr;
  float* gb = grad_b != nullptr ? full_b.data<float>() : nullptr;
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  const float* g = grad_out.data<float>();
  if (grad_out.num_elements() > 0) {
    const StridedPlan plan =
        MakePlan(shape, BroadcastStrides(a.shape(), shape), BroadcastStrides(b.shape(), shape));
    ForEachRun(plan, [&](int64_t o, int64_t pa, int64_t pb, int64_t n, int64_t ia, int64_t ib) {
      for (int64_t i = 0; i < n; ++i) {
        const bool to_a = PicksA(maximum, x[pa + i * ia], y[pb + i * ib]);
        if (ga != nullptr) ga[o + i] = to_a ? g[o + i] : 0.0f;
        if (gb != nullptr) gb[o + i] = to_a ? 0.0f : g[o + i];
      }
    });
  }
  if (grad_a != nullptr && grad_a->shape() != shape) {
    SLUICE_RETURN_IF_ERROR(SumInto(full_a, *grad_a));
  }
  if (grad_b != nullptr && grad_b->shape() != shape) {
    SLUICE_RETURN_IF_ERROR(SumInto(full_b, *grad_b));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CpuBackend::BinaryBackward(BinaryOp op, const Tensor& a, const Tensor& b,
                                        const Tensor& grad_out, Tensor* grad_a, Tensor* grad_b) {
  const Shape& shape = grad_out.shape();
  // The gradient of each operand before summing over its repeated dims,
  // computed in out's shape (only when that operand's factor is not 1).
  auto full = [&](auto fill) -> absl::StatusOr<Tensor> {
    Tensor t(DType::kFloat32, shape);
    SLUICE_RETURN_IF_ERROR(fill(t));
    return t;
  };
  if (op == BinaryOp::kEqual || op == BinaryOp::kGreater) {  // no gradient
    if (grad_a != nullptr) SLUICE_RETURN_IF_ERROR(Fill(*grad_a, 0.0f));
    if (grad_b != nullptr) SLUICE_RETURN_IF_ERROR(Fill(*grad_b, 0.0f));
    return absl::OkStatus();
  }
  if (op == BinaryOp::kMaximum || op == BinaryOp::kMinimum) {
    return SelectBackward(op == BinaryOp::kMaximum, a, b, grad_out, grad_a, grad_b);
  }
  if (grad_a != nullptr) {
    switch (op) {
      case BinaryOp::kAdd:
      case BinaryOp::kSub:
        SLUICE_RETURN_IF_ERROR(SumInto(grad_out, *grad_a));
        break;
      default: {  // kMul, kDiv
        const BinaryOp f = op == BinaryOp::kMul ? BinaryOp::kMul : BinaryOp::kDiv;
        if (grad_a->shape() == shape) {  // write straight into the gradient
          SLUICE_RETURN_IF_ERROR(Binary(f, grad_out, b, *grad_a));
        } else {
          SLUICE_ASSIGN_OR_RETURN(Tensor t,
                                  full([&](Tensor& t) { return Binary(f, grad_out, b, t); }));
          SLUICE_RETURN_IF_ERROR(SumInto(t, *grad_a));
        }
        break;
      }
    }
  }
  if (grad_b != nullptr) {
    switch (op) {
      case BinaryOp::kAdd:
        SLUICE_RETURN_IF_ERROR(SumInto(grad_out, *grad_b));
        break;
      case BinaryOp::kSub: {
        SLUICE_RETURN_IF_ERROR(SumInto(grad_out, *grad_b));
        float* p = grad_b->data<float>();
        Elementwise(grad_b->num_elements(), [&](int64_t s, int64_t e) {
          for (int64_t i = s; i < e; ++i) p[i] = -p[i];
        });
        break;
      }
      case BinaryOp::kMul:
        if (grad_b->shape() == shape) {
          SLUICE_RETURN_IF_ERROR(Binary(BinaryOp::kMul, grad_out, a, *grad_b));
        } else {
          SLUICE_ASSIGN_OR_RETURN(
              Tensor t, full([&](Tensor& t) { return Binary(BinaryOp::kMul, grad_out, a, t); }));
          SLUICE_RETURN_IF_ERROR(SumInto(t, *grad_b));
        }
        break;
      case BinaryOp::kDiv: {
        // d/db (a / b) = -a / b^2 = -(a / b) / b.
        SLUICE_ASSIGN_OR_RETURN(Tensor t, full([&](Tensor& t) -> absl::Status {
                                  SLUICE_RETURN_IF_ERROR(Binary(BinaryOp::kDiv, a, b, t));
                                  SLUICE_RETURN_IF_ERROR(Binary(BinaryOp::kDiv, t, b, t));
                                  return Binary(BinaryOp::kMul, t, grad_out, t);
                                }));
        float* p = t.data<float>();
        Elementwise(t.num_elements(), [&](int64_t s, int64_t e) {
          for (int64_t i = s; i < e; ++i) p[i] = -p[i];
        });
        SLUICE_RETURN_IF_ERROR(SumInto(t, *grad_b));
        break;
      }
      default:  // handled above
        break;
    }
  }
  return absl::OkStatus();
}

absl::Status CpuBackend::Unary(UnaryOp op, const Tensor& x, Tensor& y) {
  const float* in = x.data<float>();
  float* out = y.data<float>();
  Elementwise(x.num_elements(), [&](int64_t b, int64_t e) {
    switch (op) {
      case UnaryOp::kRelu:
        ReluRun(in + b, out + b, e - b);
        break;
      case UnaryOp::kSigmoid:
        for (int64_t i = b; i < e; ++i) out[i] = 1.0f / (1.0f + std::exp(-in[i]));
        break;
      case UnaryOp::kTanh:
        for (int64_t i = b; i < e; ++i) out[i] = std::tanh(in[i]);
        break;
      case UnaryOp::kGelu:
        for (int64_t i = b; i < e; ++i) {
          out[i] = 0.5f * in[i] * (1.0f + std::erf(in[i] * kInvSqrt2));
        }
        break;
      case UnaryOp::kExp:
        for (int64_t i = b; i < e; ++i) out[i] = std::exp(in[i]);
        break;
      case UnaryOp::kLog:
        for (int64_t i = b; i < e; ++i) out[i] = std::log(in[i]);
        break;
      case UnaryOp::kAbs:
        for (int64_t i = b; i < e; ++i) out[i] = std::fabs(in[i]);
        break;
      case UnaryOp::kSoftplus:
        for (int64_t i = b; i < e; ++i) out[i] = Softplus(in[i]);
        break;
      case UnaryOp::kSquare:
        for (int64_t i = b; i < e; ++i) out[i] = in[i] * in[i];
        break;
    }
  });
  return absl::OkStatus();
}

namespace {

SLUICE_KERNEL_CLONES void AddReluRun(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = ReluOf(a[i] + b[i]);
  }
}

}  // namespace

absl::Status CpuBackend::AddRelu(const Tensor& a, const Tensor& b, Tensor& out) {
  SLUICE_RETURN_IF_ERROR(FloatOrBFloat16("AddRelu", {&out, &a, &b}));
  Elementwise(out.num_elements(), [&](int64_t begin, int64_t end) {
    float ta[kTile], tb[kTile], to[kTile];
    for (int64_t at = begin; at < end; at += kTile) {
      const int64_t n = std::min(kTile, end - at);
      const bool direct = out.dtype() == DType::kFloat32;
      float* o = direct ? out.data<float>() + at : to;
      AddReluRun(Widen(a, at, n, ta), Widen(b, at, n, tb), o, n);
      if (!direct) Narrow(to, out, at, n);
    }
  });
  return absl::OkStatus();
}

absl::Status CpuBackend::AddReluBackward(const Tensor& out, const Tensor& grad_out, Tensor& grad_a,
                                         Tensor& grad_b) {
  SLUICE_RETURN_IF_ERROR(FloatOrBFloat16("AddReluBackward", {&out, &grad_out, &grad_a, &grad_b}));
  Elementwise(out.num_elements(), [&](int64_t begin, int64_t end) {
    float tout[kTile], tg[kTile], tgrad[kTile];
    for (int64_t at = begin; at < end; at += kTile) {
      const int64_t n = std::min(kTile, end - at);
      // out > 0 where a + b > 0: rounding to bfloat16 keeps the sign (a denormal sum, flushed
      // to 0 there, gets no gradient).
      ReluGradRun(Widen(out, at, n, tout), Widen(grad_out, at, n, tg), tgrad, n);
      Narrow(tgrad, grad_a, at, n);
      Narrow(tgrad, grad_b, at, n);
    }
  });
  return absl::OkStatus();
}

absl::Status CpuBackend::UnaryBackward(UnaryOp op, const Tensor& x, const Tensor& y,
                                       const Tensor& grad_y, Tensor& grad_x) {
  const float* in = x.data<float>();
  const float* out = y.data<float>();
  const float* g = grad_y.data<float>();
  float* gx = grad_x.data<float>();
  Elementwise(x.num_elements(), [&](int64_t b, int64_t e) {
    switch (op) {
      case UnaryOp::kRelu:  // gradient 0 at x == 0, as in TF
        ReluGradRun(out + b, g + b, gx + b, e - b);
        break;
      case UnaryOp::kSigmoid:
        for (int64_t i = b; i < e; ++i) gx[i] = g[i] * out[i] * (1.0f - out[i]);
        break;
      case UnaryOp::kTanh:
        for (int64_t i = b; i < e; ++i) gx[i] = g[i] * (1.0f - out[i] * out[i]);
        break;
      case UnaryOp::kGelu:
        // d/dx x Phi(x) = Phi(x) + x phi(x)
        for (int64_t i = b; i < e; ++i) {
          const float v = in[i];
          gx[i] = g[i] * (0.5f * (1.0f + std::erf(v * kInvSqrt2)) +
                          v * kInvSqrt2Pi * std::exp(-0.5f * v * v));
        }
        break;
      case UnaryOp::kExp:
        for (int64_t i = b; i < e; ++i) gx[i] = g[i] * out[i];
        break;
      case UnaryOp::kLog:
        for (int64_t i = b; i < e; ++i) gx[i] = g[i] / in[i];
        break;
      case UnaryOp::kAbs:  // sign(x): 0 at 0, as TF
        for (int64_t i = b; i < e; ++i) {
          gx[i] = in[i] > 0 ? g[i] : in[i] < 0 ? -g[i] : 0.0f;
        }
        break;
      case UnaryOp::kSoftplus:  // sigmoid(x), from exp(-|x|) so that it cannot overflow
        for (int64_t i = b; i < e; ++i) {
          const float z = std::exp(-std::fabs(in[i]));
          gx[i] = g[i] * (in[i] >= 0 ? 1.0f / (1.0f + z) : z / (1.0f + z));
        }
        break;
      case UnaryOp::kSquare:
        for (int64_t i = b; i < e; ++i) gx[i] = g[i] * 2.0f * in[i];
        break;
    }
  });
  return absl::OkStatus();
}

absl::Status CpuBackend::Dropout(const Tensor& x, float rate, uint64_t seed, Tensor& mask,
                                 Tensor& out) {
  // A counter-based draw per element (dropout_draw.h, the CUDA kernel's too): the same elements
  // drop on every device and thread count, and the loop runs in parallel, mask and product in one
  // pass. It replaced a sequential mt19937_64 that took 2.5% of a cnn training step.
  const uint64_t key = DropoutKey(seed);
  const float scale = 1.0f / (1.0f - rate);
  const float* in = x.data<float>();
  float* m = mask.data<float>();
  float* o = out.data<float>();
  ParallelFor(x.num_elements(), kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      m[i] = DropoutUniform(key, i) >= rate ? scale : 0.0f;
      o[i] = in[i] * m[i];
    }
  });
  return absl::OkStatus();
}

namespace {

// Float to integer: truncated toward zero, saturated, NaN to 0 (CUDA's cvt.rzi.sat).
template <typename I>
I FloatToInt(float v) {
  if (v != v) return 0;
  // The integer's limits as floats round up (2^31, 2^63): anything at or past them saturates.
  constexpr float kHi = static_cast<float>(std::numeric_limits<I>::max());
  constexpr float kLo = static_cast<float>(std::numeric_limits<I>::min());
  if (v >= kHi) return std::numeric_limits<I>::max();
  if (v <= kLo) return std::numeric_limits<I>::min();
  return static_cast<I>(v);
}

template <typename From, typename To>
void CastRun(const From* x, To* y, int64_t n) {
  ParallelFor(n, kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if constexpr (std::is_same_v<From, float> && !std::is_same_v<To, float>) {
        y[i] = FloatToInt<To>(x[i]);
      } else {
        y[i] = static_cast<To>(x[i]);
      }
    }
  });
}

template <typename From>
absl::Status CastFrom(const From* x, Tensor& y, int64_t n) {
  switch (y.dtype()) {
    case DType::kFloat32:
      CastRun(x, y.data<float>(), n);
      return absl::OkStatus();
    case DType::kInt32:
      CastRun(x, y.data<int32_t>(), n);
      return absl::OkStatus();
    case DType::kInt64:
      CastRun(x, y.data<int64_t>(), n);
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("Cast: cannot cast to ", DTypeName(y.dtype())));
  }
}

}  // namespace

absl::Status CpuBackend::Cast(const Tensor& x, Tensor& y) {
  if (x.num_elements() != y.num_elements()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Cast: ", x.shape().DebugString(), " into ", y.shape().DebugString()));
  }
  if (x.dtype() == DType::kBFloat16 || y.dtype() == DType::kBFloat16) return CastBFloat16(x, y);
  const int64_t n = x.num_elements();
  switch (x.dtype()) {
    case DType::kFloat32:
      return CastFrom(x.data<float>(), y, n);
    case DType::kInt32:
      return CastFrom(x.data<int32_t>(), y, n);
    case DType::kInt64:
      return CastFrom(x.data<int64_t>(), y, n);
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("Cast: cannot cast from ", DTypeName(x.dtype())));
  }
}

}  // namespace sluice::train::backend::cpu
