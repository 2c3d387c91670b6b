#include "train/backend/cuda/strided_index.h"

#include "absl/strings/str_cat.h"

namespace sluice::train::backend::cuda {

absl::StatusOr<kernels::StridedIndex> MakeStridedIndex(const Shape& out,
                                                       const std::vector<int64_t>& stride_a,
                                                       const std::vector<int64_t>& stride_b) {
  std::vector<int64_t> dims, sa, sb;
  for (int d = 0; d < out.rank(); ++d) {
    const int64_t n = out.dim(d);
    if (n == 1) continue;
    if (!dims.empty() && sa.back() == stride_a[d] * n && sb.back() == stride_b[d] * n) {
      dims.back() *= n;
      sa.back() = stride_a[d];
      sb.back() = stride_b[d];
      continue;
    }
    dims.push_back(n);
    sa.push_back(stride_a[d]);
    sb.push_back(stride_b[d]);
  }
  if (static_cast<int>(dims.size()) > kernels::kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat("CUDA kernels read at most ", kernels::kMaxRank,
                                                   " dims after merging; shape ", out.DebugString(),
                                                   " leaves ", dims.size()));
  }
  kernels::StridedIndex index;
  index.rank = static_cast<int>(dims.size());
  for (int d = 0; d < index.rank; ++d) {
    index.dims[d] = dims[d];
    index.stride_a[d] = sa[d];
    index.stride_b[d] = sb[d];
  }
  return index;
}

std::vector<int64_t> ContiguousStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.rank(), 1);
  for (int d = shape.rank() - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape.dim(d + 1);
  return strides;
}

}  // namespace sluice::train::backend::cuda
