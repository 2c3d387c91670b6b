// The CpuBackend's reductions (sum and max over any dims, and max's gradient) and their adjoint,
// BroadcastTo. Each splits its outermost loop across CpuThreads() (ParallelFor) and keeps the
// innermost loop contiguous so that the compiler vectorises it.

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/broadcast.h"
#include "train/backend/cpu/cpu_backend.h"
#include "train/backend/cpu/cpu_kernel_util.h"
#include "train/backend/cpu/cpu_threads.h"

namespace sluice::train::backend::cpu {
namespace {

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
  // A NaN wins and stays, as TensorFlow's reduce_max (std::max kept whichever came first).
  return (v > acc || v != v) ? v : acc;
}

template <ReduceOp kOp>
constexpr float Identity() {
  return kOp == ReduceOp::kSum ? 0.0f : -std::numeric_limits<float>::infinity();
}

// A sum of a contiguous run in blocks of kSumBlock: each block in kSumLanes float accumulators
// (lane l takes elements l, l + kSumLanes, ...: vectorised without reassociating), folded in a
// fixed order, and the blocks' sums in a double. One float accumulator lost 8.8% over 10M
// elements of 0.1 and stopped at 2^24 over ones. The order depends on n only, so the bits do not
// depend on the thread count or the instruction set; below kSumLanes elements they are those of
// a plain left-to-right sum.
constexpr int64_t kSumBlock = 4096;
constexpr int kSumLanes = 16;

SLUICE_KERNEL_CLONES float SumRun(const float* x, int64_t n) {
  double total = 0;
  for (int64_t b = 0; b < n; b += kSumBlock) {
    const int64_t m = std::min(kSumBlock, n - b);
    const float* p = x + b;
    float lanes[kSumLanes] = {};
    int64_t i = 0;
    for (; i + kSumLanes <= m; i += kSumLanes) {
      for (int l = 0; l < kSumLanes; ++l) lanes[l] += p[i + l];
    }
    float block = 0;
    for (int l = 0; l < kSumLanes; ++l) block += lanes[l];
    for (; i < m; ++i) block += p[i];
    total += block;
  }
  return static_cast<float>(total);
}

// out[k] = reduce over r of x[k * r_count + r]: contiguous runs.
template <ReduceOp kOp>
SLUICE_KERNEL_CLONES float ReduceRun(const float* x, int64_t n) {
  if constexpr (kOp == ReduceOp::kSum) return SumRun(x, n);
  float acc = Identity<kOp>();
  for (int64_t i = 0; i < n; ++i) acc = Combine<kOp>(acc, x[i]);
  return acc;
}

// acc[j] = combine(acc[j], x[j]) over a row: the [R, K] (column) case. Sums keep double
// accumulators, for the same reason as SumRun.
template <ReduceOp kOp, typename Acc>
SLUICE_KERNEL_CLONES void CombineRow(const float* x, Acc* acc, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    if constexpr (kOp == ReduceOp::kSum) {
      acc[j] += x[j];
    } else {
      acc[j] = Combine<kOp>(acc[j], x[j]);
    }
  }
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
    ParallelFor(n_out, std::max<int64_t>(1, kGrain / std::max<int64_t>(r, 1)),
                [&](int64_t b, int64_t e) {
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
      const float* base = in + outer * r * k2;
      if constexpr (kOp == ReduceOp::kSum) {
        std::vector<double> sums(static_cast<size_t>(j1 - j0), 0.0);
        for (int64_t i = 0; i < r; ++i) CombineRow<kOp>(base + i * k2 + j0, sums.data(), j1 - j0);
        for (int64_t j = j0; j < j1; ++j) acc[j] = static_cast<float>(sums[j - j0]);
      } else {
        std::fill(acc + j0, acc + j1, Identity<kOp>());
        for (int64_t i = 0; i < r; ++i) CombineRow<kOp>(base + i * k2 + j0, acc + j0, j1 - j0);
      }
      finish(outer * k2 + j0, outer * k2 + j1);
    };
    // A zero-size reduced dim (an empty batch's broadcast gradient) must not divide the grain.
    const int64_t rows = std::max<int64_t>(r, 1);
    if (k1 > 1) {
      ParallelFor(k1, std::max<int64_t>(1, kGrain / (rows * k2)), [&](int64_t b, int64_t e) {
        for (int64_t outer = b; outer < e; ++outer) columns(outer, 0, k2);
      });
    } else {
      // Split the columns: each thread keeps its own contiguous block.
      ParallelFor(k2, std::max<int64_t>(16, kGrain / rows),
                  [&](int64_t b, int64_t e) { columns(0, b, e); });
    }
    return;
  }
  // Anything else (rare in training): one pass with an odometer, sums in double.
  const std::vector<int64_t> so = BroadcastStrides(out.shape(), x.shape());
  const std::vector<int64_t> zeros(x.rank(), 0);
  if constexpr (kOp == ReduceOp::kSum) {
    std::vector<double> sums(static_cast<size_t>(n_out), 0.0);
    ForEachBroadcast(x.shape(), so, zeros,
                     [&](int64_t i, int64_t p, int64_t) { sums[p] += in[i]; });
    for (int64_t p = 0; p < n_out; ++p) o[p] = static_cast<float>(sums[p]);
  } else {
    std::fill_n(o, n_out, Identity<kOp>());
    ForEachBroadcast(x.shape(), so, zeros,
                     [&](int64_t i, int64_t p, int64_t) { o[p] = Combine<kOp>(o[p], in[i]); });
  }
  finish(0, n_out);
}

}  // namespace

absl::Status SumInto(const Tensor& full, Tensor& grad) {
  if (full.num_elements() == 0) {  // an empty batch's gradient of a broadcast operand
    std::fill_n(grad.data<float>(), grad.num_elements(), 0.0f);
    return absl::OkStatus();
  }
  if (grad.shape() == full.shape()) {
    std::memcpy(grad.raw_data(), full.raw_data(), full.byte_size());
    return absl::OkStatus();
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor view, AsRankOf(grad, full.shape()));
  ReduceKernel<ReduceOp::kSum>(full, RepeatedDims(grad.shape(), full.shape()), 1.0f, view);
  return absl::OkStatus();
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

// Not inlined: the caller's `total += ScaledSum(...)` must not become one fused multiply-add
// where the target has one (Reduce and Axpby round the product and the sum apart).
__attribute__((noinline)) float ScaledSum(const float* x, int64_t n, float scale) {
  // One sequential run, as Reduce sums over all of x (its plan merges every reduced dim into one),
  // then scaled as its `finish` scales.
  float sum = ReduceRun<ReduceOp::kSum>(x, n);
  if (scale != 1.0f) sum *= scale;
  return sum;
}

absl::Status CpuBackend::AccumulateSum(const Tensor& x, float scale, Tensor& total) {
  if (x.dtype() != DType::kFloat32 || total.dtype() != DType::kFloat32 ||
      total.num_elements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("CpuBackend::AccumulateSum: want float32 x and a float32 [1] total, got ",
                     DTypeName(x.dtype()), x.shape().DebugString(), " and ",
                     DTypeName(total.dtype()), total.shape().DebugString()));
  }
  total.data<float>()[0] += ScaledSum(x.data<float>(), x.num_elements(), scale);
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

}  // namespace sluice::train::backend::cpu
