// Layout kernels: explicit zero padding of NHWC activations, for the
// convolutions whose padding is asymmetric (cuDNN pads both sides equally).

#include "train/backend/cuda/kernels.h"
#include "train/backend/cuda/launch_util.cuh"

namespace sluice::train::backend::cuda::kernels {
namespace {

__global__ void PadKernel(const float* in, float* out, int64_t h, int64_t w, int64_t c, int64_t hp,
                          int64_t wp, int64_t top, int64_t left, int64_t total) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    int64_t t = i;
    const int64_t ch = t % c;
    t /= c;
    const int64_t x = t % wp - left;
    t /= wp;
    const int64_t y = t % hp - top;
    const int64_t b = t / hp;
    out[i] = (y >= 0 && y < h && x >= 0 && x < w) ? in[((b * h + y) * w + x) * c + ch] : 0.0f;
  }
}

}  // namespace

cudaError_t PadNhwc(const float* in, float* out, int64_t n, int64_t h, int64_t w, int64_t c,
                    int64_t top, int64_t bottom, int64_t left, int64_t right, cudaStream_t stream) {
  const int64_t hp = h + top + bottom, wp = w + left + right;
  const int64_t total = n * hp * wp * c;
  if (total == 0) return cudaSuccess;
  PadKernel<<<GridFor(total), kThreads, 0, stream>>>(in, out, h, w, c, hp, wp, top, left, total);
  return cudaGetLastError();
}

}  // namespace sluice::train::backend::cuda::kernels
