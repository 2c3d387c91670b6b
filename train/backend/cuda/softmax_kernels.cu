// Row-wise softmax, its backward, and the sparse softmax cross-entropy: one
// block per row, sized to the row (a warp for 10 classes, 256 threads for
// wide rows).

#include <cmath>

#include "train/backend/cuda/kernels.h"
#include "train/backend/cuda/launch_util.cuh"

namespace sluice::train::backend::cuda::kernels {
namespace {

int ThreadsForRow(int64_t c) {
  const int64_t t = (c < kThreads ? c : kThreads);
  return static_cast<int>(t < 32 ? 32 : (t + 31) / 32 * 32);
}

unsigned RowGrid(int64_t rows) {
  return static_cast<unsigned>(rows < (1 << 20) ? rows : (1 << 20));
}

__device__ inline float RowMax(const float* x, int64_t c, float* scratch) {
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) m = fmaxf(m, x[j]);
  return BlockReduce<true>(m, scratch);
}

__device__ inline float RowSumExp(const float* x, int64_t c, float m, float* scratch) {
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) s += expf(x[j] - m);
  return BlockReduce<false>(s, scratch);
}

__global__ void SoftmaxKernel(const float* x, float* y, int64_t rows, int64_t c) {
  __shared__ float scratch[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* in = x + row * c;
    float* out = y + row * c;
    const float m = RowMax(in, c, scratch);
    const float inv = 1.0f / RowSumExp(in, c, m, scratch);
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) out[j] = expf(in[j] - m) * inv;
  }
}

__global__ void SoftmaxBackwardKernel(const float* y, const float* g, float* gx, int64_t rows,
                                      int64_t c) {
  __shared__ float scratch[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* p = y + row * c;
    const float* d = g + row * c;
    float dot = 0.0f;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) dot += d[j] * p[j];
    dot = BlockReduce<false>(dot, scratch);
    // dx = y * (g - sum(g * y)).
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) gx[row * c + j] = p[j] * (d[j] - dot);
  }
}

__global__ void SparseXentKernel(const float* logits, const int64_t* labels, float* loss,
                                 float* probs, int64_t rows, int64_t c) {
  __shared__ float scratch[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* x = logits + row * c;
    const float m = RowMax(x, c, scratch);
    const float log_sum = logf(RowSumExp(x, c, m, scratch));
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      probs[row * c + j] = expf(x[j] - m - log_sum);
    }
    // m - x[label] first: exact when the label holds the maximum, where m + log_sum would round
    // log_sum to m's spacing (logits [1000, 990]: 6.1e-5 for 4.54e-5).
    if (threadIdx.x == 0) loss[row] = (m - x[labels[row]]) + log_sum;
  }
}

__global__ void SparseXentBackwardKernel(const float* probs, const int64_t* labels,
                                         const float* grad_loss, bool one_gradient, float scale,
                                         float* gx, int64_t n, int64_t c) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t row = i / c, j = i - row * c;
    // Rounded on its own, as the broadcast of a reduced loss's gradient rounds it.
    const float d = __fmul_rn(grad_loss[one_gradient ? 0 : row], scale);
    gx[i] = d * probs[i] - (j == labels[row] ? d : 0.0f);
  }
}

}  // namespace

cudaError_t Softmax(const float* x, float* y, int64_t rows, int64_t c, cudaStream_t stream) {
  if (rows * c == 0) return cudaSuccess;
  SoftmaxKernel<<<RowGrid(rows), ThreadsForRow(c), 0, stream>>>(x, y, rows, c);
  return cudaGetLastError();
}

cudaError_t SoftmaxBackward(const float* y, const float* grad_y, float* grad_x, int64_t rows,
                            int64_t c, cudaStream_t stream) {
  if (rows * c == 0) return cudaSuccess;
  SoftmaxBackwardKernel<<<RowGrid(rows), ThreadsForRow(c), 0, stream>>>(y, grad_y, grad_x, rows, c);
  return cudaGetLastError();
}

cudaError_t SparseSoftmaxCrossEntropy(const float* logits, const int64_t* labels, float* loss,
                                      float* probs, int64_t rows, int64_t c, cudaStream_t stream) {
  if (rows * c == 0) return cudaSuccess;
  SparseXentKernel<<<RowGrid(rows), ThreadsForRow(c), 0, stream>>>(logits, labels, loss, probs,
                                                                   rows, c);
  return cudaGetLastError();
}

cudaError_t SparseSoftmaxCrossEntropyBackward(const float* probs, const int64_t* labels,
                                              const float* grad_loss, bool one_gradient,
                                              float scale, float* grad_logits, int64_t rows,
                                              int64_t c, cudaStream_t stream) {
  const int64_t n = rows * c;
  if (n == 0) return cudaSuccess;
  SparseXentBackwardKernel<<<GridFor(n), kThreads, 0, stream>>>(
      probs, labels, grad_loss, one_gradient, scale, grad_logits, n, c);
  return cudaGetLastError();
}

}  // namespace sluice::train::backend::cuda::kernels
