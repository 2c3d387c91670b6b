// 2-D pooling on NHWC tensors with any padding (TF's SAME padding is
// asymmetric, which cuDNN's pooling cannot express). The forward reads each
// window; the backward gathers, for each input element, the gradients of the
// windows that hold it, so it needs no atomics and is deterministic.

#include <cmath>

#include "train/backend/cuda/kernels.h"
#include "train/backend/cuda/launch_util.cuh"

namespace sluice::train::backend::cuda::kernels {
namespace {

__global__ void PoolForwardKernel(PoolParams p, const float* in, float* out, int32_t* argmax,
                                  int64_t total) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    int64_t t = i;
    const int64_t ch = t % p.c;
    t /= p.c;
    const int64_t ox = t % p.ow;
    t /= p.ow;
    const int64_t oy = t % p.oh;
    const int64_t b = t / p.oh;
    const int64_t y0 = oy * p.stride_h - p.pad_top, x0 = ox * p.stride_w - p.pad_left;
    const int64_t y_begin = y0 < 0 ? 0 : y0, x_begin = x0 < 0 ? 0 : x0;
    const int64_t y_end = y0 + p.window_h < p.h ? y0 + p.window_h : p.h;
    const int64_t x_end = x0 + p.window_w < p.w ? x0 + p.window_w : p.w;
    const float* base = in + b * p.h * p.w * p.c + ch;
    if (p.max) {
      float best = -INFINITY;
      int64_t best_pos = y_begin * p.w + x_begin;
      for (int64_t y = y_begin; y < y_end; ++y) {
        for (int64_t x = x_begin; x < x_end; ++x) {
          const float v = base[(y * p.w + x) * p.c];
          // The first maximum wins ties; the first NaN wins, and stays (PyTorch's max pool keeps
          // it, and a ReLU before it now does).
          if (v > best || (isnan(v) && !isnan(best))) {
            best = v;
            best_pos = y * p.w + x;
          }
        }
      }
      out[i] = best;
      argmax[i] = static_cast<int32_t>(best_pos);
    } else {
      float sum = 0.0f;
      for (int64_t y = y_begin; y < y_end; ++y) {
        for (int64_t x = x_begin; x < x_end; ++x) sum += base[(y * p.w + x) * p.c];
      }
      const int64_t count = (y_end - y_begin) * (x_end - x_begin);
      out[i] = count > 0 ? sum / static_cast<float>(count) : 0.0f;
    }
  }
}

// Output rows (or columns) whose window covers input position `pos`.
__device__ inline void Covering(int64_t pos, int64_t pad, int64_t window, int64_t stride,
                                int64_t out_size, int64_t& first, int64_t& last) {
  const int64_t hi = pos + pad;  // o * stride <= hi and o * stride + window > hi
  first = hi - window + 1 <= 0 ? 0 : (hi - window + 1 + stride - 1) / stride;
  last = hi / stride;
  if (last > out_size - 1) last = out_size - 1;
}

__global__ void PoolBackwardKernel(PoolParams p, const float* grad_out, const int32_t* argmax,
                                   float* grad_in, int64_t total) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    int64_t t = i;
    const int64_t ch = t % p.c;
    t /= p.c;
    const int64_t ix = t % p.w;
    t /= p.w;
    const int64_t iy = t % p.h;
    const int64_t b = t / p.h;
    int64_t oy0, oy1, ox0, ox1;
    Covering(iy, p.pad_top, p.window_h, p.stride_h, p.oh, oy0, oy1);
    Covering(ix, p.pad_left, p.window_w, p.stride_w, p.ow, ox0, ox1);
    const int64_t here = iy * p.w + ix;
    float sum = 0.0f;
    for (int64_t oy = oy0; oy <= oy1; ++oy) {
      for (int64_t ox = ox0; ox <= ox1; ++ox) {
        const int64_t o = ((b * p.oh + oy) * p.ow + ox) * p.c + ch;
        if (p.max) {
          if (argmax[o] == here) sum += grad_out[o];
        } else {
          const int64_t y0 = oy * p.stride_h - p.pad_top, x0 = ox * p.stride_w - p.pad_left;
          const int64_t y_begin = y0 < 0 ? 0 : y0, x_begin = x0 < 0 ? 0 : x0;
          const int64_t y_end = y0 + p.window_h < p.h ? y0 + p.window_h : p.h;
          const int64_t x_end = x0 + p.window_w < p.w ? x0 + p.window_w : p.w;
          sum += grad_out[o] / static_cast<float>((y_end - y_begin) * (x_end - x_begin));
        }
      }
    }
    grad_in[i] = sum;
  }
}

}  // namespace

cudaError_t PoolForward(const PoolParams& p, const float* in, float* out, int32_t* argmax,
                        cudaStream_t stream) {
  const int64_t total = p.n * p.oh * p.ow * p.c;
  if (total == 0) return cudaSuccess;
  PoolForwardKernel<<<GridFor(total), kThreads, 0, stream>>>(p, in, out, argmax, total);
  return cudaGetLastError();
}

cudaError_t PoolBackward(const PoolParams& p, const float* grad_out, const int32_t* argmax,
                         float* grad_in, cudaStream_t stream) {
  const int64_t total = p.n * p.h * p.w * p.c;
  if (total == 0) return cudaSuccess;
  PoolBackwardKernel<<<GridFor(total), kThreads, 0, stream>>>(p, grad_out, argmax, grad_in, total);
  return cudaGetLastError();
}

}  // namespace sluice::train::backend::cuda::kernels
