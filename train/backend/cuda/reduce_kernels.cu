// Reductions: a general kernel (one block per output, coalesced when the
// reduced dims are innermost) and a column kernel for [k1, r, k2] reduced over
// r (bias gradients, batch statistics), which reads rows coalesced.

#include <cmath>
#include <type_traits>

#include "train/backend/cuda/kernels.h"
#include "train/backend/cuda/launch_util.cuh"

namespace sluice::train::backend::cuda::kernels {
namespace {

template <bool kMax, typename A>
__device__ inline A Combine(A acc, float v) {
  // A NaN wins a max and stays, as the CPU's and TensorFlow's (fmaxf drops it).
  return kMax ? ((v > acc || v != v) ? v : acc) : acc + v;
}

// A thread's running sum over its share of a long reduction is a double, as the CPU's block sums
// are: a thread may add tens of thousands of values in sequence (a reduction of few rows' worth
// of blocks), and a float sum of 16,384 values of 0.1 is 1.5e-4 off. The reads bound these
// loops, not the adds.
template <bool kMax>
using ThreadSum = std::conditional_t<kMax, float, double>;

// With `accumulate` (sums only), out[k] += the scaled sum, the product and the sum rounded apart
// (no FMA), as Reduce then Axpby(1, ., 1, out) round them.
template <bool kMax>
__global__ void ReduceGenericKernel(const float* in, float* out, int64_t n_out, StridedIndex kept,
                                    StridedIndex reduced, int64_t r_count, float scale,
                                    bool accumulate) {
  __shared__ float scratch[32];
  for (int64_t k = blockIdx.x; k < n_out; k += gridDim.x) {
    const int64_t base = OffsetA(kept, k);
    ThreadSum<kMax> own = kMax ? -INFINITY : 0.0f;
    for (int64_t r = threadIdx.x; r < r_count; r += blockDim.x) {
      own = Combine<kMax>(own, in[base + OffsetA(reduced, r)]);
    }
    const float acc = BlockReduce<kMax>(static_cast<float>(own), scratch);
    if (threadIdx.x == 0) {
      const float v = kMax ? acc : __fmul_rn(acc, scale);
      out[k] = accumulate ? __fadd_rn(out[k], v) : v;
    }
  }
}

// ReduceGenericKernel's first pass when there are few outputs and many elements to reduce into
// each: block b reduces slice b % splits of output b / splits into partial[b], unscaled.
template <bool kMax>
__global__ void ReduceGenericSlicesKernel(const float* in, float* partial, int64_t n_out,
                                          StridedIndex kept, StridedIndex reduced, int64_t r_count,
                                          int64_t splits, int64_t per_split) {
  __shared__ float scratch[32];
  for (int64_t b = blockIdx.x; b < n_out * splits; b += gridDim.x) {
    const int64_t k = b / splits, r0 = (b % splits) * per_split;
    const int64_t r1 = r0 + per_split < r_count ? r0 + per_split : r_count;
    const int64_t base = OffsetA(kept, k);
    ThreadSum<kMax> own = kMax ? -INFINITY : 0.0f;
    for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x) {
      own = Combine<kMax>(own, in[base + OffsetA(reduced, r)]);
    }
    const float acc = BlockReduce<kMax>(static_cast<float>(own), scratch);
    if (threadIdx.x == 0) partial[b] = acc;
  }
}

// The threads of a block that reduces r elements: a warp at least, kThreads at most; short rows
// get narrow blocks.
int BlockThreads(int64_t r) {
  const int threads = static_cast<int>(((r < kThreads ? r : kThreads) + 31) / 32 * 32);
  return threads == 0 ? 32 : threads;
}

constexpr int kColumnTile = 32;  // columns per block (one warp wide)
constexpr int kColumnRows = 8;   // rows read at once per block

template <bool kMax>
__global__ void ReduceColumnsKernel(const float* in, float* dst, int64_t k1, int64_t r, int64_t k2,
                                    int64_t rows_per_split, float scale, bool final) {
  __shared__ float tile[kColumnRows][kColumnTile + 1];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColumnTile + threadIdx.x;
  const int64_t split = blockIdx.z;
  const int64_t r0 = split * rows_per_split;
  const int64_t r1 = r0 + rows_per_split < r ? r0 + rows_per_split : r;
  for (int64_t outer = blockIdx.y; outer < k1; outer += gridDim.y) {
    ThreadSum<kMax> own = kMax ? -INFINITY : 0.0f;
    if (col < k2) {
      const float* base = in + outer * r * k2 + col;
      for (int64_t i = r0 + threadIdx.y; i < r1; i += kColumnRows) {
        own = Combine<kMax>(own, base[i * k2]);
      }
    }
    tile[threadIdx.y][threadIdx.x] = static_cast<float>(own);
    __syncthreads();
    if (threadIdx.y == 0 && col < k2) {
      float v = tile[0][threadIdx.x];
      for (int j = 1; j < kColumnRows; ++j) v = Combine<kMax>(v, tile[j][threadIdx.x]);
      if (final) {
        dst[outer * k2 + col] = kMax ? v : v * scale;
      } else {
        dst[(split * k1 + outer) * k2 + col] = v;
      }
    }
    __syncthreads();
  }
}

template <bool kMax>
cudaError_t LaunchColumns(const float* in, float* out, int64_t k1, int64_t r, int64_t k2,
                          int splits, float* partial, float scale, cudaStream_t stream) {
  const dim3 block(kColumnTile, kColumnRows);
  const unsigned col_blocks = static_cast<unsigned>((k2 + kColumnTile - 1) / kColumnTile);
  const unsigned outer_blocks = static_cast<unsigned>(k1 < 65535 ? k1 : 65535);
  if (splits <= 1) {
    ReduceColumnsKernel<kMax><<<dim3(col_blocks, outer_blocks, 1), block, 0, stream>>>(
        in, out, k1, r, k2, r, scale, true);
    return cudaGetLastError();
  }
  const int64_t rows_per_split = (r + splits - 1) / splits;
  ReduceColumnsKernel<kMax>
      <<<dim3(col_blocks, outer_blocks, static_cast<unsigned>(splits)), block, 0, stream>>>(
          in, partial, k1, r, k2, rows_per_split, scale, false);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  // partial [splits, k1 * k2]: one more column pass over the slices.
  const int64_t cols = k1 * k2;
  ReduceColumnsKernel<kMax>
      <<<dim3(static_cast<unsigned>((cols + kColumnTile - 1) / kColumnTile), 1, 1), block, 0,
         stream>>>(partial, out, 1, splits, cols, splits, scale, true);
  return cudaGetLastError();
}

// ReduceGeneric's launches, which ScaledSum shares so that it gives Reduce's bits: one block per
// output, or with splits > 1 the slices into partial [n_out, splits] and then one block per
// output over those. `accumulate` (sums only) adds to out.
template <bool kMax>
cudaError_t LaunchGeneric(const float* in, float* out, int64_t n_out, const StridedIndex& kept,
                          const StridedIndex& reduced, int64_t r_count, float scale,
                          bool accumulate, int splits, float* partial, cudaStream_t stream) {
  if (splits > 1) {
    const int64_t per_split = (r_count + splits - 1) / splits;
    const int64_t blocks = n_out * splits;
    ReduceGenericSlicesKernel<kMax>
        <<<static_cast<unsigned>(blocks < (1 << 20) ? blocks : (1 << 20)), kThreads, 0, stream>>>(
            in, partial, n_out, kept, reduced, r_count, splits, per_split);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
    StridedIndex outputs, slices;
    outputs.rank = slices.rank = 1;
    outputs.dims[0] = n_out;
    outputs.stride_a[0] = splits;
    slices.dims[0] = splits;
    slices.stride_a[0] = 1;
    return LaunchGeneric<kMax>(partial, out, n_out, outputs, slices, splits, scale, accumulate, 1,
                               nullptr, stream);
  }
  const unsigned grid = static_cast<unsigned>(n_out < (1 << 20) ? n_out : (1 << 20));
  ReduceGenericKernel<kMax><<<grid, BlockThreads(r_count), 0, stream>>>(
      in, out, n_out, kept, reduced, r_count, scale, accumulate);
  return cudaGetLastError();
}

}  // namespace

cudaError_t ScaledSum(const float* in, int64_t n, float scale, bool accumulate, int splits,
                      float* partial, float* out, cudaStream_t stream) {
  // Reduce's launches for a sum over all of a contiguous tensor (its dims merged into one).
  StridedIndex kept, all;
  all.rank = 1;
  all.dims[0] = n;
  all.stride_a[0] = 1;
  return LaunchGeneric<false>(in, out, 1, kept, all, n, scale, accumulate, splits, partial, stream);
}

int GenericSplits(int64_t n_out, int64_t r_count) {
  // One block per output reads at most one SM's bandwidth: below two waves of a 132-SM H100,
  // long reductions are cut into slices of about 16K elements, at most 1,024 of them.
  if (n_out < 1 || r_count < kGenericSplitMin || n_out >= 264) return 1;
  int64_t splits = (r_count + 16383) / 16384;
  const int64_t fill = (2048 + n_out - 1) / n_out;
  if (splits > fill) splits = fill;
  if (splits > 1024) splits = 1024;
  return static_cast<int>(splits < 1 ? 1 : splits);
}

cudaError_t ReduceGeneric(ReduceKind op, const float* in, float* out, int64_t n_out,
                          const StridedIndex& kept, const StridedIndex& reduced, int64_t r_count,
                          float scale, int splits, float* partial, cudaStream_t stream) {
  if (n_out == 0) return cudaSuccess;
  return op == ReduceKind::kMax ? LaunchGeneric<true>(in, out, n_out, kept, reduced, r_count, scale,
                                                      false, splits, partial, stream)
                                : LaunchGeneric<false>(in, out, n_out, kept, reduced, r_count,
                                                       scale, false, splits, partial, stream);
}

int ColumnSplits(int64_t k1, int64_t r, int64_t k2) {
  const int64_t blocks = (k2 + kColumnTile - 1) / kColumnTile * (k1 < 65535 ? k1 : 65535);
  constexpr int64_t kTargetBlocks = 1024;  // several waves on a 132-SM H100
  int64_t splits = blocks >= kTargetBlocks ? 1 : (kTargetBlocks + blocks - 1) / blocks;
  const int64_t max_splits = (r + 63) / 64;
  if (splits > max_splits) splits = max_splits;
  if (splits > 1024) splits = 1024;
  return static_cast<int>(splits < 1 ? 1 : splits);
}

cudaError_t ReduceColumns(ReduceKind op, const float* in, float* out, int64_t k1, int64_t r,
                          int64_t k2, int splits, float* partial, float scale,
                          cudaStream_t stream) {
  if (k1 * k2 == 0) return cudaSuccess;
  return op == ReduceKind::kMax
             ? LaunchColumns<true>(in, out, k1, r, k2, splits, partial, scale, stream)
             : LaunchColumns<false>(in, out, k1, r, k2, splits, partial, scale, stream);
}

}  // namespace sluice::train::backend::cuda::kernels
