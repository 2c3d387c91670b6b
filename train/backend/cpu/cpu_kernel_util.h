#ifndef SLUICE_TRAIN_BACKEND_CPU_CPU_KERNEL_UTIL_H_
#define SLUICE_TRAIN_BACKEND_CPU_CPU_KERNEL_UTIL_H_

// What the CpuBackend's loop kernels (cpu_*_kernels.cc) share: the grain of their parallel
// loops, the AVX2 clones of hot loops, strided iteration over broadcast operands, and the sum of
// a gradient down to its operand's shape. Internal to the CPU backend.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "train/backend/cpu/cpu_threads.h"

namespace sluice::train::backend::cpu {

// Below this many elements a loop runs on the calling thread: handing work to
// another thread costs a few microseconds.
inline constexpr int64_t kGrain = 32 * 1024;

// max(x, 0) that keeps a NaN, as PyTorch's and TensorFlow's ReLU: x > 0 ? x : 0 made it 0, so
// bad data trained a model into NaN weights while its loss stayed finite. Vectorizes as a
// compare and a blend.
inline float ReluOf(float x) { return x <= 0.0f ? 0.0f : x; }

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

inline StridedPlan MakePlan(const Shape& out, std::vector<int64_t> sa, std::vector<int64_t> sb) {
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

// Runs fn(begin, end) over chunks of [0, n), in parallel from 2 x kGrain elements.
template <typename Fn>
void Elementwise(int64_t n, const Fn& fn) {
  ParallelFor(n, kGrain, fn);
}

// Sums `full`, a gradient in an op's output shape, over the dims `grad`'s operand was broadcast
// along, into `grad` (a copy when the shapes are equal).
absl::Status SumInto(const Tensor& full, Tensor& grad);

// scale * the sum of x[0, n) in order, rounded as Reduce rounds a sum over all of a tensor: the
// kernels that fuse a reduction into another pass give its bits.
float ScaledSum(const float* x, int64_t n, float scale);

}  // namespace sluice::train::backend::cpu

#endif  // SLUICE_TRAIN_BACKEND_CPU_CPU_KERNEL_UTIL_H_
