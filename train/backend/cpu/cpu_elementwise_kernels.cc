// The CpuBackend kernels that are plain loops: elementwise with broadcasting,
// reductions, data movement, softmax and its loss, dropout and optimizer
// updates. Each splits its outermost loop across CpuThreads() (ParallelFor)
// and keeps the innermost loop contiguous with compile-time strides so that
// the compiler vectorises it.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/float16.h"
#include "core/status_macros.h"
#include "train/backend/broadcast.h"
#include "train/backend/cpu/bfloat16_convert.h"
#include "train/backend/cpu/cpu_backend.h"
#include "train/backend/cpu/cpu_threads.h"
#include "train/backend/dropout_draw.h"

namespace sluice::train::backend::cpu {
namespace {

// Below this many elements a loop runs on the calling thread: handing work to
// another thread costs a few microseconds.
constexpr int64_t kGrain = 32 * 1024;

// AVX2 and baseline copies of the hot loops, picked at load time (the build
// targets baseline x86-64, as in ops/resize.cc).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SLUICE_KERNEL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SLUICE_KERNEL_CLONES
#endif

// --- broadcasting iteration ---------------------------------------------------

// Up to two operands read through strides as `out`'s shape, with adjacent
// dims merged wherever both operands (and the output) are contiguous across
// them: [64, 256] + [256] stays two dims, [64, 256] + [64, 256] becomes one.
struct StridedPlan {
  std::vector<int64_t> dims;  // outermost first; the last is the inner run
  std::vector<int64_t> sa, sb;
};

StridedPlan MakePlan(const Shape& out, std::vector<int64_t> sa, std::vector<int64_t> sb) {
  StridedPlan plan;
  for (int d = 0; d < out.rank(); ++d) {
    if (out.dim(d) == 1) continue;
    if (!plan.dims.empty()) {
      const int64_t n = out.dim(d);
      if (plan.sa.back() == sa[d] * n && plan.sb.back() == sb[d] * n) {
        plan.dims.back() *= n;
        plan.sa.back() = sa[d];
        plan.sb.back() = sb[d];
        continue;
      }
    }
    plan.dims.push_back(out.dim(d));
    plan.sa.push_back(sa[d]);
    plan.sb.push_back(sb[d]);
  }
  if (plan.dims.empty()) {  // a scalar
    plan.dims = {1};
    plan.sa = {0};
    plan.sb = {0};
  }
  return plan;
}

// Calls run(out_offset, a_offset, b_offset, length, a_step, b_step) for each
// inner run of the plan, rows split across threads (or, for one long run, the
// run itself split).
template <typename Run>
void ForEachRun(const StridedPlan& plan, const Run& run) {
  const int rank = static_cast<int>(plan.dims.size());
  const int64_t inner = plan.dims.back();
  const int64_t ia = plan.sa.back(), ib = plan.sb.back();
  int64_t rows = 1;
  for (int d = 0; d + 1 < rank; ++d) rows *= plan.dims[d];
  if (rows == 1) {
    ParallelFor(inner, kGrain, [&](int64_t begin, int64_t end) {
      run(begin, begin * ia, begin * ib, end - begin, ia, ib);
    });
    return;
  }
  ParallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(inner, 1)),
              [&](int64_t begin, int64_t end) {
                // Odometer over the outer dims, started at row `begin`.
                std::vector<int64_t> index(rank - 1);
                int64_t oa = 0, ob = 0;
                for (int64_t r = begin, d = rank - 2; d >= 0; --d) {
                  index[d] = r % plan.dims[d];
                  r /= plan.dims[d];
                  oa += index[d] * plan.sa[d];
                  ob += index[d] * plan.sb[d];
                }
                for (int64_t r = begin; r < end; ++r) {
                  run(r * inner, oa, ob, inner, ia, ib);
                  for (int d = rank - 2; d >= 0; --d) {
                    oa += plan.sa[d];
                    ob += plan.sb[d];
                    if (++index[d] < plan.dims[d]) break;
                    oa -= plan.sa[d] * plan.dims[d];
                    ob -= plan.sb[d] * plan.dims[d];
                    index[d] = 0;
                  }
                }
              });
}

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

// --- reductions ----------------------------------------------------------------

// x's dims with size-1 dims dropped and neighbours of the same kind (reduced
// or kept) merged: [64, 256] reduced over 0 is {R 64, K 256}.
struct ReducePlan {
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
};

ReducePlan MakeReducePlan(const Shape& shape, const std::vector<bool>& reduced) {
  ReducePlan plan;
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape.dim(d) == 1) continue;
    if (!plan.dims.empty() && plan.reduced.back() == reduced[d]) {
      plan.dims.back() *= shape.dim(d);
    } else {
      plan.dims.push_back(shape.dim(d));
      plan.reduced.push_back(reduced[d]);
    }
  }
  return plan;
}

template <ReduceOp kOp>
inline float Combine(float acc, float v) {
  if constexpr (kOp == ReduceOp::kSum) return acc + v;
  return std::max(acc, v);
}

template <ReduceOp kOp>
constexpr float Identity() {
  return kOp == ReduceOp::kSum ? 0.0f : -std::numeric_limits<float>::infinity();
}

// out[k] = reduce over r of x[k * r_count + r]: contiguous runs.
template <ReduceOp kOp>
SLUICE_KERNEL_CLONES float ReduceRun(const float* x, int64_t n) {
  float acc = Identity<kOp>();
  for (int64_t i = 0; i < n; ++i) acc = Combine<kOp>(acc, x[i]);
  return acc;
}

// acc[j] = combine(acc[j], x[j]) over a row: the [R, K] (column) case.
template <ReduceOp kOp>
SLUICE_KERNEL_CLONES void CombineRow(const float* x, float* acc, int64_t n) {
  for (int64_t j = 0; j < n; ++j) acc[j] = Combine<kOp>(acc[j], x[j]);
}

template <ReduceOp kOp>
void ReduceKernel(const Tensor& x, const std::vector<bool>& reduced, float scale, Tensor& out) {
  const ReducePlan plan = MakeReducePlan(x.shape(), reduced);
  const float* in = x.data<float>();
  float* o = out.data<float>();
  const int64_t n_out = out.num_elements();
  const int rank = static_cast<int>(plan.dims.size());
  auto finish = [&](int64_t begin, int64_t end) {
    if (kOp == ReduceOp::kSum && scale != 1.0f) {
      for (int64_t i = begin; i < end; ++i) o[i] *= scale;
    }
  };
  if (rank == 0 || (rank == 1 && !plan.reduced[0])) {  // nothing to reduce
    ParallelFor(n_out, kGrain, [&](int64_t b, int64_t e) {
      std::copy(in + b, in + e, o + b);
      finish(b, e);
    });
    return;
  }
  // Pattern [K?] R: each output is a contiguous run.
  if (plan.reduced.back() && (rank == 1 || rank == 2)) {
    const int64_t r = plan.dims.back();
    ParallelFor(n_out, std::max<int64_t>(1, kGrain / r), [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) o[k] = ReduceRun<kOp>(in + k * r, r);
      finish(b, e);
    });
    return;
  }
  // Pattern [K1?] R K2: column reductions, split across K1 or else K2.
  if (!plan.reduced.back() && plan.reduced[rank - 2] && (rank == 2 || rank == 3)) {
    const int64_t k2 = plan.dims[rank - 1], r = plan.dims[rank - 2];
    const int64_t k1 = rank == 3 ? plan.dims[0] : 1;
    auto columns = [&](int64_t outer, int64_t j0, int64_t j1) {
      float* acc = o + outer * k2;
      std::fill(acc + j0, acc + j1, Identity<kOp>());
      const float* base = in + outer * r * k2;
      for (int64_t i = 0; i < r; ++i) CombineRow<kOp>(base + i * k2 + j0, acc + j0, j1 - j0);
      finish(outer * k2 + j0, outer * k2 + j1);
    };
    if (k1 > 1) {
      ParallelFor(k1, std::max<int64_t>(1, kGrain / (r * k2)), [&](int64_t b, int64_t e) {
        for (int64_t outer = b; outer < e; ++outer) columns(outer, 0, k2);
      });
    } else {
      // Split the columns: each thread keeps its own contiguous block.
      ParallelFor(k2, std::max<int64_t>(16, kGrain / r),
                  [&](int64_t b, int64_t e) { columns(0, b, e); });
    }
    return;
  }
  // Anything else (rare in training): one pass with an odometer.
  std::fill_n(o, n_out, Identity<kOp>());
  const std::vector<int64_t> so = BroadcastStrides(out.shape(), x.shape());
  const std::vector<int64_t> zeros(x.rank(), 0);
  ForEachBroadcast(x.shape(), so, zeros,
                   [&](int64_t i, int64_t p, int64_t) { o[p] = Combine<kOp>(o[p], in[i]); });
  finish(0, n_out);
}

absl::Status SumInto(const Tensor& full, Tensor& grad) {
  if (grad.shape() == full.shape()) {
    std::memcpy(grad.raw_data(), full.raw_data(), full.byte_size());
    return absl::OkStatus();
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor view, AsRankOf(grad, full.shape()));
  ReduceKernel<ReduceOp::kSum>(full, RepeatedDims(grad.shape(), full.shape()), 1.0f, view);
  return absl::OkStatus();
}

// --- unary ---------------------------------------------------------------------

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// log(1 + e^x) = log1p(e^-|x|) + max(x, 0): e^-|x| <= 1 never overflows, and log1p keeps the
// small values of large negative x.
inline float Softplus(float x) { return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0f); }

SLUICE_KERNEL_CLONES void ReluRun(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0.0f;
}
// From relu's output: y > 0 exactly where x > 0.
SLUICE_KERNEL_CLONES void ReluGradRun(const float* y, const float* g, float* gx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gx[i] = y[i] > 0 ? g[i] : 0.0f;
}

// The same from a bfloat16 y (ReluToBFloat16's), widened exactly.
SLUICE_KERNEL_CLONES void ReluGradFromBFloat16Run(const uint16_t* y, const float* g, float* gx,
                                                  int64_t n) {
  for (int64_t i = 0; i < n; ++i) gx[i] = BFloat16::ToFloat(y[i]) > 0 ? g[i] : 0.0f;
}

template <typename Fn>
void Elementwise(int64_t n, const Fn& fn) {
  ParallelFor(n, kGrain, fn);
}

// --- row-wise softmax ------------------------------------------------------------

void SoftmaxRow(const float* x, float* o, int64_t c) {
  const float m = *std::max_element(x, x + c);
  double sum = 0;
  for (int64_t j = 0; j < c; ++j) sum += (o[j] = std::exp(x[j] - m));
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t j = 0; j < c; ++j) o[j] *= inv;
}

int64_t Rows(const Tensor& t) {
  const int64_t c = t.dim(t.rank() - 1);
  return c == 0 ? 0 : t.num_elements() / c;
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
  if (x.dtype() != DType::kFloat32 || y.dtype() != DType::kFloat32 || x.shape() != y.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Axpby: want two float32 tensors of one shape, got ", DTypeName(x.dtype()),
        x.shape().DebugString(), " and ", DTypeName(y.dtype()), y.shape().DebugString()));
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
  if (y.dtype() == DType::kBFloat16) {
    if (op != UnaryOp::kRelu || x.dtype() != DType::kFloat32) {
      return absl::InvalidArgumentError("Unary: a bfloat16 result is for relu of float32 only");
    }
    ReluToBFloat16(x.data<float>(), static_cast<uint16_t*>(y.raw_data()), x.num_elements());
    return absl::OkStatus();
  }
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

absl::Status CpuBackend::UnaryBackward(UnaryOp op, const Tensor& x, const Tensor& y,
                                       const Tensor& grad_y, Tensor& grad_x) {
  if (y.dtype() == DType::kBFloat16) {
    if (op != UnaryOp::kRelu) {
      return absl::InvalidArgumentError("UnaryBackward: a bfloat16 y is for relu only");
    }
    const auto* out = static_cast<const uint16_t*>(y.raw_data());
    const float* g = grad_y.data<float>();
    float* gx = grad_x.data<float>();
    Elementwise(y.num_elements(), [&](int64_t b, int64_t e) {
      ReluGradFromBFloat16Run(out + b, g + b, gx + b, e - b);
    });
    return absl::OkStatus();
  }
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

absl::Status CpuBackend::Reduce(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced,
                                float scale, Tensor& out) {
  if (out.num_elements() == 0) return absl::OkStatus();
  if (x.num_elements() == 0) return Fill(out, 0.0f);  // an empty sum (max is refused earlier)
  if (op == ReduceOp::kSum) {
    ReduceKernel<ReduceOp::kSum>(x, reduced, scale, out);
  } else {
    ReduceKernel<ReduceOp::kMax>(x, reduced, 1.0f, out);
  }
  return absl::OkStatus();
}

absl::Status CpuBackend::BroadcastTo(const Tensor& in, float scale, Tensor& out) {
  const StridedPlan plan = MakePlan(out.shape(), BroadcastStrides(in.shape(), out.shape()),
                                    std::vector<int64_t>(out.rank(), 0));
  const float* x = in.data<float>();
  float* z = out.data<float>();
  if (out.num_elements() == 0) return absl::OkStatus();
  ForEachRun(plan, [&](int64_t o, int64_t pa, int64_t, int64_t n, int64_t ia, int64_t) {
    for (int64_t i = 0; i < n; ++i) z[o + i] = scale * x[pa + i * ia];
  });
  return absl::OkStatus();
}

absl::Status CpuBackend::ReduceMaxBackward(const Tensor& x, const Tensor& max,
                                           const Tensor& grad_max, Tensor& grad_x) {
  const std::vector<int64_t> so = BroadcastStrides(max.shape(), x.shape());
  const std::vector<int64_t> zeros(x.rank(), 0);
  const float* d = grad_max.data<float>();
  const float* in = x.data<float>();
  const float* m = max.data<float>();
  float* o = grad_x.data<float>();
  std::vector<float> ties(max.num_elements(), 0.0f);
  ForEachBroadcast(x.shape(), so, zeros, [&](int64_t i, int64_t p, int64_t) {
    if (in[i] == m[p]) ties[p] += 1;
  });
  ForEachBroadcast(x.shape(), so, zeros, [&](int64_t i, int64_t p, int64_t) {
    o[i] = in[i] == m[p] ? d[p] / ties[p] : 0.0f;
  });
  return absl::OkStatus();
}

absl::Status CpuBackend::Transpose(const Tensor& x, const std::vector<int>& perm, Tensor& out) {
  const int rank = x.rank();
  std::vector<int64_t> in_strides(rank, 1), read(rank);
  for (int d = rank - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * x.dim(d + 1);
  for (int i = 0; i < rank; ++i) read[i] = in_strides[perm[i]];
  const StridedPlan plan = MakePlan(out.shape(), read, std::vector<int64_t>(rank, 0));
  const float* in = x.data<float>();
  float* o = out.data<float>();
  if (out.num_elements() == 0) return absl::OkStatus();
  ForEachRun(plan, [&](int64_t z, int64_t pa, int64_t, int64_t n, int64_t ia, int64_t) {
    for (int64_t i = 0; i < n; ++i) o[z + i] = in[pa + i * ia];
  });
  return absl::OkStatus();
}

namespace {
// Viewed as [outer, dim(axis) * inner], each part is one contiguous block per
// row; Concat and Split copy those blocks.
void ConcatBlocks(const Shape& out_shape, int axis, const std::vector<const Tensor*>& parts,
                  bool into_parts, float* whole) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= out_shape.dim(d);
  for (int d = axis + 1; d < out_shape.rank(); ++d) inner *= out_shape.dim(d);
  const int64_t row = out_shape.dim(axis) * inner;
  ParallelFor(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(row, 1)),
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) {
                  int64_t offset = 0;
                  for (const Tensor* p : parts) {
                    const int64_t w = p->dim(axis) * inner;
                    float* part = const_cast<float*>(p->data<float>()) + r * w;
                    float* span = whole + r * row + offset;
                    if (into_parts) {
                      std::memcpy(part, span, w * sizeof(float));
                    } else {
                      std::memcpy(span, part, w * sizeof(float));
                    }
                    offset += w;
                  }
                }
              });
}
}  // namespace

absl::Status CpuBackend::Concat(const std::vector<Tensor>& inputs, int axis, Tensor& out) {
  std::vector<const Tensor*> parts;
  for (const Tensor& t : inputs) parts.push_back(&t);
  ConcatBlocks(out.shape(), axis, parts, /*into_parts=*/false, out.data<float>());
  return absl::OkStatus();
}

absl::Status CpuBackend::Split(const Tensor& x, int axis, std::vector<Tensor>& outputs) {
  std::vector<const Tensor*> parts;
  for (const Tensor& t : outputs) parts.push_back(&t);
  ConcatBlocks(x.shape(), axis, parts, /*into_parts=*/true, const_cast<float*>(x.data<float>()));
  return absl::OkStatus();
}

absl::Status CpuBackend::Softmax(const Tensor& logits, Tensor& y) {
  const int64_t c = logits.dim(logits.rank() - 1), rows = Rows(logits);
  const float* x = logits.data<float>();
  float* o = y.data<float>();
  ParallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(c, 1) / 8),
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) SoftmaxRow(x + r * c, o + r * c, c);
              });
  return absl::OkStatus();
}

absl::Status CpuBackend::SoftmaxBackward(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  const int64_t c = y.dim(y.rank() - 1), rows = Rows(y);
  ParallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(c, 1)),
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) {
                  // dx = y * (g - sum(g * y)) per row.
                  const float* p = y.data<float>() + r * c;
                  const float* d = grad_y.data<float>() + r * c;
                  float* o = grad_x.data<float>() + r * c;
                  double dot = 0;
                  for (int64_t j = 0; j < c; ++j) dot += d[j] * p[j];
                  for (int64_t j = 0; j < c; ++j) o[j] = p[j] * (d[j] - static_cast<float>(dot));
                }
              });
  return absl::OkStatus();
}

absl::Status CpuBackend::SparseSoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels,
                                                   Tensor& loss, Tensor& probs) {
  const int64_t n = logits.dim(0), c = logits.dim(1);
  const int64_t* label = labels.data<int64_t>();
  ParallelFor(n, std::max<int64_t>(1, kGrain / std::max<int64_t>(c, 1) / 8),
              [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i) {
                  const float* x = logits.data<float>() + i * c;
                  float* p = probs.data<float>() + i * c;
                  const float m = c > 0 ? *std::max_element(x, x + c) : 0.0f;
                  double sum = 0;
                  for (int64_t j = 0; j < c; ++j) sum += std::exp(static_cast<double>(x[j] - m));
                  const double log_sum = std::log(sum);
                  for (int64_t j = 0; j < c; ++j) {
                    p[j] = static_cast<float>(std::exp(x[j] - m - log_sum));
                  }
                  loss.data<float>()[i] = static_cast<float>(m + log_sum - x[label[i]]);
                }
              });
  return absl::OkStatus();
}

absl::Status CpuBackend::SparseSoftmaxCrossEntropyBackward(const Tensor& probs,
                                                           const Tensor& labels,
                                                           const Tensor& grad_loss,
                                                           Tensor& grad_logits) {
  const int64_t n = probs.dim(0), c = probs.dim(1);
  const int64_t* label = labels.data<int64_t>();
  ParallelFor(n, std::max<int64_t>(1, kGrain / std::max<int64_t>(c, 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      // d loss_n / d logits_n = softmax - one_hot(label).
      const float* p = probs.data<float>() + i * c;
      float* o = grad_logits.data<float>() + i * c;
      const float d = grad_loss.data<float>()[i];
      for (int64_t j = 0; j < c; ++j) o[j] = d * p[j];
      o[label[i]] -= d;
    }
  });
  return absl::OkStatus();
}

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
