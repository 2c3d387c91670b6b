// Label kernels: the cast to int64 with a range check, and in-top-k and argmax
// for the accuracy metrics. They keep the labels on the device: only a count (or the
// sum of the hits) is ever copied back.

#include "train/backend/cuda/kernels.h"
#include "train/backend/cuda/launch_util.cuh"
#include "train/backend/in_top_k_row.h"

namespace sluice::train::backend::cuda::kernels {
namespace {

template <typename Label>
__global__ void CastLabelsKernel(const Label* labels, int64_t n, int64_t classes, int64_t* out,
                                 float* invalid) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t l = static_cast<int64_t>(labels[i]);
    const bool ok = l >= 0 && l < classes;
    out[i] = ok ? l : 0;
    // Counts are small integers: float atomics add them exactly.
    if (!ok) atomicAdd(invalid, 1.0f);
  }
}

// One thread per row: rows are classes wide (tens to a thousand), and the
// metric runs once per step.
template <typename Label>
__global__ void InTopKKernel(const float* predictions, const Label* labels, int64_t n, int64_t c,
                             int k, bool first_max_only, float* out) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    out[i] = train::backend::InTopKRow(predictions + i * c, c, static_cast<int64_t>(labels[i]), k,
                                       first_max_only)
                 ? 1.0f
                 : 0.0f;
  }
}

__global__ void ArgMaxKernel(const float* x, int64_t rows, int64_t c, int64_t* out) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    out[i] = train::backend::ArgMaxRow(x + i * c, c);
  }
}

}  // namespace

cudaError_t ArgMax(const float* x, int64_t rows, int64_t c, int64_t* out, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  ArgMaxKernel<<<GridFor(rows), kThreads, 0, stream>>>(x, rows, c, out);
  return cudaGetLastError();
}

cudaError_t CastLabels(const void* labels, bool labels_int32, int64_t n, int64_t classes,
                       int64_t* out, float* invalid, cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(invalid, 0, sizeof(float), stream);
  if (e != cudaSuccess || n == 0) return e;
  if (labels_int32) {
    CastLabelsKernel<<<GridFor(n), kThreads, 0, stream>>>(static_cast<const int32_t*>(labels), n,
                                                          classes, out, invalid);
  } else {
    CastLabelsKernel<<<GridFor(n), kThreads, 0, stream>>>(static_cast<const int64_t*>(labels), n,
                                                          classes, out, invalid);
  }
  return cudaGetLastError();
}

cudaError_t InTopK(const float* predictions, const void* labels, bool labels_int32, int64_t n,
                   int64_t c, int k, bool first_max_only, float* out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (labels_int32) {
    InTopKKernel<<<GridFor(n), kThreads, 0, stream>>>(
        predictions, static_cast<const int32_t*>(labels), n, c, k, first_max_only, out);
  } else {
    InTopKKernel<<<GridFor(n), kThreads, 0, stream>>>(
        predictions, static_cast<const int64_t*>(labels), n, c, k, first_max_only, out);
  }
  return cudaGetLastError();
}

}  // namespace sluice::train::backend::cuda::kernels
