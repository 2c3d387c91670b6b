#ifndef SLUICE_TRAIN_OPS_BATCH_NORM_H_
#define SLUICE_TRAIN_OPS_BATCH_NORM_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// Channels-last batch normalisation: x is [..., C] and statistics are taken
// over every axis but the last; gamma, beta, mean and variance are [C] float32. x is float32, or
// bfloat16 on a backend that reads bfloat16 operands (the output and x's gradient then are too).
// The CPU backend runs its own kernels on float32 and bfloat16 data alike (the [..., C] tensor
// read as [M, C]; cpu_batch_norm_kernels.h).

struct BatchNormTrainingResult {
  Tensor output;
  Tensor mean;      // the batch mean [C], for the layer's moving average
  Tensor variance;  // the biased batch variance [C], as tf.nn.moments
};

// Normalises with the batch's own statistics; gradients flow to x, gamma and
// beta (through the statistics too).
absl::StatusOr<BatchNormTrainingResult> BatchNormTraining(const Tensor& x, const Tensor& gamma,
                                                          const Tensor& beta,
                                                          float epsilon = 1e-3f);

// max(BatchNormTraining(x, ...).output, 0), the ReLU fused into the batch norm's pass where the
// backend has the kernel (its backward reads the ReLU's mask, a workspace of the backend's
// BatchNormReluWorkspaceBytes, instead of the output), else the two ops. The same values and
// gradients either way, bit for bit on the CPU, but for one bfloat16 case: a positive
// pre-activation below bfloat16's smallest normal flushes to an output of +0, yet its mask (taken
// before rounding) passes its gradient, where a separate ReLU would not.
absl::StatusOr<BatchNormTrainingResult> BatchNormReluTraining(const Tensor& x, const Tensor& gamma,
                                                              const Tensor& beta,
                                                              float epsilon = 1e-3f);

// Normalises with given (moving) statistics; gradients flow to x, gamma and
// beta, none to mean and variance.
absl::StatusOr<Tensor> BatchNormInference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          const Tensor& mean, const Tensor& variance,
                                          float epsilon = 1e-3f);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_BATCH_NORM_H_
