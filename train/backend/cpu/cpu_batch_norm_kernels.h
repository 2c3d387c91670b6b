#ifndef SLUICE_TRAIN_BACKEND_CPU_CPU_BATCH_NORM_KERNELS_H_
#define SLUICE_TRAIN_BACKEND_CPU_CPU_BATCH_NORM_KERNELS_H_

// The CpuBackend's float32 batch norm over x [m, c] (channels innermost), with the ReLU after it
// where relu_mask (uint8 [m, c], a byte an element) is given: the forward writes it, the backward
// passes the gradient where it is 1. Internal to the CPU backend; bfloat16 runs on oneDNN.

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

}  // namespace sluice::train::backend::cpu

#endif  // SLUICE_TRAIN_BACKEND_CPU_CPU_BATCH_NORM_KERNELS_H_
