#ifndef SLUICE_TRAIN_BACKEND_CUDA_LAUNCH_UTIL_CUH_
#define SLUICE_TRAIN_BACKEND_CUDA_LAUNCH_UTIL_CUH_

// Helpers shared by the *_kernels.cu files (device code only).

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "train/backend/cuda/kernels.h"

namespace sluice::train::backend::cuda::kernels {

constexpr int kThreads = 256;

// Enough blocks to cover n with grid-stride loops, capped so that huge
// tensors reuse threads instead of launching millions of blocks.
inline unsigned GridFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks, 65535 * 8)));
}

// A grid-stride loop over [0, n).
#define SLUICE_GRID_LOOP(i, n)                                                           \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// Runs body(i, load(k)) for the elements i of [n / c, c] this thread owns, k being i's channel.
// Where the grid's stride is a multiple of c (c divides kThreads), all of a thread's elements
// are of one channel: `load` runs once per thread, not once per element, and no element pays
// for a 64-bit division.
template <class Load, class Body>
__device__ inline void ForChannelElements(int64_t n, int64_t c, Load load, Body body) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (stride % c == 0) {
    if (i >= n) return;
    const auto p = load(i % c);
    for (; i < n; i += stride) body(i, p);
  } else {
    for (; i < n; i += stride) body(i, load(i % c));
  }
}

// Offset of output element i in operand a (and b when asked).
__device__ inline int64_t OffsetA(const StridedIndex& ix, int64_t i) {
  int64_t off = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    const int64_t q = i / ix.dims[d];
    off += (i - q * ix.dims[d]) * ix.stride_a[d];
    i = q;
  }
  return off;
}

__device__ inline void OffsetsAB(const StridedIndex& ix, int64_t i, int64_t& oa, int64_t& ob) {
  oa = 0;
  ob = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    const int64_t q = i / ix.dims[d];
    const int64_t r = i - q * ix.dims[d];
    oa += r * ix.stride_a[d];
    ob += r * ix.stride_b[d];
    i = q;
  }
}

// max(v, 0) that keeps a NaN, as the CPU's ReluOf (cpu_kernel_util.h) and PyTorch's ReLU.
__device__ inline float ReluOf(float v) { return v <= 0.0f ? 0.0f : v; }

__device__ inline float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// A NaN wins and stays, as in each thread's own max (reduce_kernels.cu's Combine) and the CPU's:
// fmaxf drops it.
__device__ inline float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = (w > v || w != w) ? w : v;
  }
  return v;
}

// Reduces v across the block (blockDim.x a multiple of 32, at most 1024);
// every thread gets the result. `scratch` holds 32 floats of shared memory.
template <bool kMax>
__device__ inline float BlockReduce(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  v = kMax ? WarpMax(v) : WarpSum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const float identity = kMax ? -INFINITY : 0.0f;
  v = lane < warps ? scratch[lane] : identity;
  return kMax ? WarpMax(v) : WarpSum(v);
}

}  // namespace sluice::train::backend::cuda::kernels

#endif  // SLUICE_TRAIN_BACKEND_CUDA_LAUNCH_UTIL_CUH_
