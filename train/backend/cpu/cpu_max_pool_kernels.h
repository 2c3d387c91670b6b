#ifndef SLUICE_TRAIN_BACKEND_CPU_CPU_MAX_POOL_KERNELS_H_
#define SLUICE_TRAIN_BACKEND_CPU_CPU_MAX_POOL_KERNELS_H_

// The CpuBackend's max pooling over NHWC float32, which keeps a NaN as PyTorch's and TensorFlow's
// do: the first NaN in a window is its maximum. oneDNN's is a vmaxps, which drops a NaN wherever
// it is in the window (measured on oneDNN 2.6), so a NaN activation vanished. Padding never wins.
// Internal to the CPU backend.

#include <cstdint>

#include "train/backend/backend.h"

namespace sluice::train::backend::cpu {

// The most pixels of the image a window may cover: the forward notes each output's position in a
// uint16_t.
inline constexpr int64_t kMaxPoolWindowLimit = 65535;

// y [n, oh, ow, c] = each window's maximum of x [n, h, w, c], and argmax [n, oh, ow, c] the
// position, in the part of the window inside the image (row-major), of the first element that
// holds it.
void MaxPoolForwardF32(const PoolGeometry& g, const float* x, float* y, uint16_t* argmax);

// grad_x = each output's gradient added at the position the forward chose (argmax);
// overlapping windows add up.
void MaxPoolBackwardF32(const PoolGeometry& g, const uint16_t* argmax, const float* grad_y,
                        float* grad_x);

}  // namespace sluice::train::backend::cpu

#endif  // SLUICE_TRAIN_BACKEND_CPU_CPU_MAX_POOL_KERNELS_H_
