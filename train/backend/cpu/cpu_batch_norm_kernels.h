#ifndef SLUICE_TRAIN_BACKEND_CPU_CPU_BATCH_NORM_KERNELS_H_
#define SLUICE_TRAIN_BACKEND_CPU_CPU_BATCH_NORM_KERNELS_H_

// The CpuBackend's float32 batch norm over x [m, c] (channels innermost), with the ReLU after it
// where relu_mask (BatchNormReluMaskBytes(m, c) bytes) is given: the forward writes it, the
// backward passes the gradient where it is set. The BF16 forms take bfloat16 data (x, y and the
// gradients; the parameters and statistics stay float32): each result is the float32 form's on the
// widened data, rounded once. Internal to the CPU backend.

#include <cstdint>

namespace sluice::train::backend::cpu {

// The batch's mean and biased variance, and y = (x - mean) / sqrt(variance + epsilon) gamma +
// beta (then max(y, 0)).
void BatchNormTrainingF32(const float* x, int64_t m, int64_t c, const float* gamma,
                          const float* beta, float epsilon, float* y, float* mean, float* variance,
                          uint8_t* relu_mask);
// y with the statistics given.
void BatchNormInferenceF32(const float* x, int64_t m, int64_t c, const float* gamma,
                           const float* beta, const float* mean, const float* variance,
                           float epsilon, float* y);
// grad_beta = sum g', grad_gamma = sum g' xhat, and grad_x through the batch's statistics or,
// with statistics_are_constant, as if they were inputs: g' gamma / sqrt(variance + epsilon).
void BatchNormBackwardF32(const float* x, const float* grad_y, const uint8_t* relu_mask, int64_t m,
                          int64_t c, const float* gamma, const float* mean, const float* variance,
                          float epsilon, bool statistics_are_constant, float* grad_x,
                          float* grad_gamma, float* grad_beta);

// The size of the ReLU's mask for x [m, c]: a bit an element where the AVX-512 loops run (see
// internal::UsesAvx512BatchNorm), else a byte (1 where the output is positive).
int64_t BatchNormReluMaskBytes(int64_t m, int64_t c);

// The same three on bfloat16 data (uint16_t bits).
void BatchNormTrainingBF16(const uint16_t* x, int64_t m, int64_t c, const float* gamma,
                           const float* beta, float epsilon, uint16_t* y, float* mean,
                           float* variance, uint8_t* relu_mask);
void BatchNormInferenceBF16(const uint16_t* x, int64_t m, int64_t c, const float* gamma,
                            const float* beta, const float* mean, const float* variance,
                            float epsilon, uint16_t* y);
void BatchNormBackwardBF16(const uint16_t* x, const uint16_t* grad_y, const uint8_t* relu_mask,
                           int64_t m, int64_t c, const float* gamma, const float* mean,
                           const float* variance, float epsilon, bool statistics_are_constant,
                           uint16_t* grad_x, float* grad_gamma, float* grad_beta);

namespace internal {
// Whether the AVX-512 loops may run (where the CPU has AVX512-BF16 and the channels are 16, 32,
// 64 or 128); false runs the portable ones everywhere, so that tests reach both. Default true.
void AllowAvx512BatchNorm(bool allowed);
// Whether c channels run the AVX-512 loops now.
bool UsesAvx512BatchNorm(int64_t c);
}  // namespace internal

}  // namespace sluice::train::backend::cpu

#endif  // SLUICE_TRAIN_BACKEND_CPU_CPU_BATCH_NORM_KERNELS_H_
