// The CpuBackend's kernels that only move data: Transpose, Concat and Split.

#include <algorithm>
#include <cstring>
#include <vector>

#include "train/backend/cpu/cpu_backend.h"
#include "train/backend/cpu/cpu_kernel_util.h"
#include "train/backend/cpu/cpu_threads.h"

namespace sluice::train::backend::cpu {

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

}  // namespace sluice::train::backend::cpu
