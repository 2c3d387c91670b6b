#ifndef SLUICE_TRAIN_BACKEND_CUDA_STRIDED_INDEX_H_
#define SLUICE_TRAIN_BACKEND_CUDA_STRIDED_INDEX_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/shape.h"
#include "train/backend/cuda/kernels.h"

namespace sluice::train::backend::cuda {

// The kernels' StridedIndex for reading up to two operands (element strides
// per dim of `out`, 0 where an operand repeats) as `out`'s shape. Dims of size
// 1 are dropped and neighbours merged wherever both operands stay contiguous
// across them, so that [64, 256] + [64, 256] becomes one dim and the
// kernel's index arithmetic stays short. An error if more than
// kernels::kMaxRank dims remain.
absl::StatusOr<kernels::StridedIndex> MakeStridedIndex(const Shape& out,
                                                       const std::vector<int64_t>& stride_a,
                                                       const std::vector<int64_t>& stride_b);

// Row-major element strides of a contiguous tensor of `shape`.
std::vector<int64_t> ContiguousStrides(const Shape& shape);

}  // namespace sluice::train::backend::cuda

#endif  // SLUICE_TRAIN_BACKEND_CUDA_STRIDED_INDEX_H_
