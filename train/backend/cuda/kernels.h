#ifndef SLUICE_TRAIN_BACKEND_CUDA_KERNELS_H_
#define SLUICE_TRAIN_BACKEND_CUDA_KERNELS_H_

// Launchers of our own CUDA kernels (the *_kernels.cu files). The interface is
// plain C++ with raw device pointers so that the .cu files, compiled by nvcc,
// include neither Abseil nor the rest of sluice. Every launcher queues its work
// on `stream` and returns cudaGetLastError() (a launch error), never waiting
// for the kernel.

#include <cuda_runtime.h>

#include <cstdint>

namespace sluice::train::backend::cuda::kernels {

constexpr int kMaxRank = 8;

// Offsets of up to two operands read as an output of shape `dims`: element i
// of the output (row-major) reads a[sum_d index_d * stride_a[d]], likewise b.
// A stride of 0 repeats an operand along that dim (broadcasting).
struct StridedIndex {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t stride_a[kMaxRank] = {};
  int64_t stride_b[kMaxRank] = {};
};

enum class BinaryKind : int { kAdd, kSub, kMul, kDiv, kEqualMask, kMaximum, kMinimum, kGreater };
enum class UnaryKind : int { kRelu, kSigmoid, kTanh, kGelu, kExp, kLog, kAbs, kSoftplus, kSquare };
// Element types of Cast.
enum class CastType : int { kFloat32, kInt32, kInt64, kFloat16, kBFloat16 };
enum class ReduceKind : int { kSum, kMax };

// --- elementwise_kernels.cu ---------------------------------------------------
cudaError_t Fill(float* p, int64_t n, float value, cudaStream_t stream);
// y[i] = alpha * x[i] + beta * y[i].
cudaError_t Axpby(float alpha, const float* x, float beta, float* y, int64_t n,
                  cudaStream_t stream);
// out[i] = a[..] (op) b[..]; kEqualMask (kGreater) gives 1 where a == b (a > b), else 0;
// kMaximum/kMinimum pick a on ties and when a is NaN (Backend's BinaryOp).
// `contiguous` when both operands have out's shape (the index is unused).
cudaError_t Binary(BinaryKind op, const float* a, const float* b, float* out, int64_t n,
                   const StridedIndex& index, bool contiguous, cudaStream_t stream);
// out[i] = scale * in[base + offset_a(i)]: broadcast, transpose and crop.
cudaError_t Gather(const float* in, int64_t base, float* out, int64_t n, const StridedIndex& index,
                   float scale, cudaStream_t stream);
// The gradient of kMaximum (maximum) or kMinimum in out's shape: grad_a[i] = g[i] where the
// forward picked a[..], else 0, and grad_b[i] = g[i] - grad_a[i]. Either may be null.
cudaError_t SelectBackward(bool maximum, const float* a, const float* b, const float* g,
                           float* grad_a, float* grad_b, int64_t n, const StridedIndex& index,
                           bool contiguous, cudaStream_t stream);
cudaError_t Unary(UnaryKind op, const float* x, float* y, int64_t n, cudaStream_t stream);
cudaError_t UnaryBackward(UnaryKind op, const float* x, const float* y, const float* grad_y,
                          float* grad_x, int64_t n, cudaStream_t stream);
// y[i] = x[i] converted; float to integer truncates and saturates, NaN giving 0. The 16-bit
// floats convert to and from float32 only (to them: rounded to nearest even);
// cudaErrorInvalidValue for other pairs.
cudaError_t Cast(const void* x, CastType from, void* y, CastType to, int64_t n,
                 cudaStream_t stream);
// mask[i] = (u_i >= rate) / (1 - rate), u_i uniform in [0, 1) from a hash of
// (seed, i); out = x * mask.
cudaError_t Dropout(const float* x, float* mask, float* out, int64_t n, float rate, uint64_t seed,
                    cudaStream_t stream);
// grad_x[i] = mask[i] != 0 ? grad_max[p] / ties[p] : 0, p = offset_a(i).
cudaError_t MaxBackward(const float* mask, const float* grad_max, const float* ties, float* grad_x,
                        int64_t n, const StridedIndex& index, cudaStream_t stream);
// scaled[i] = src[i] * factor.
cudaError_t Scale(const float* src, float factor, float* dst, int64_t n, cudaStream_t stream);
// out [n / c, c] += bias [c] along the rows, then max(out, 0) with `relu`: a matmul's or a
// convolution's bias and activation in one pass, with Binary's and Unary's arithmetic.
cudaError_t BiasActivation(float* out, const float* bias, int64_t n, int64_t c, bool relu,
                           cudaStream_t stream);

// --- batch_norm_kernels.cu ------------------------------------------------------
// Batch norm over x [m, c], channels innermost. The per-channel sums go through `partial`
// [2, slices, c] (slices of rows summed in a fixed order: deterministic, no atomics); slices from
// BatchNormSlices. relu_mask (uint8 [m, c], may be null) is the fused ReLU's: the forward writes
// it, the backward passes the gradient only where it is 1.
int BatchNormSlices(int64_t m, int64_t c);
constexpr int64_t kBatchNormMaxChannels = 65535 * 32;  // the sums' column tiles: a grid dim
// mean = sum x / m.
cudaError_t BatchNormMean(const float* x, int64_t m, int64_t c, int slices, float* partial,
                          float* mean, cudaStream_t stream);
// variance = sum (x - mean)^2 / m (biased; about the mean, so no cancellation of large squares).
cudaError_t BatchNormVariance(const float* x, const float* mean, int64_t m, int64_t c, int slices,
                              float* partial, float* variance, cudaStream_t stream);
// y = (x - mean[k]) / sqrt(variance[k] + epsilon) * gamma[k] + beta[k]; with relu_mask,
// y = max(y, 0) and relu_mask = y > 0.
cudaError_t BatchNormNormalize(const float* x, const float* mean, const float* variance,
                               const float* gamma, const float* beta, float epsilon, float* y,
                               uint8_t* relu_mask, int64_t m, int64_t c, cudaStream_t stream);
// grad_beta = sum g', grad_gamma = sum g' xhat, xhat = (x - mean) / sqrt(variance + epsilon),
// g' = grad_y (masked by relu_mask).
cudaError_t BatchNormParamGrads(const float* x, const float* grad_y, const uint8_t* relu_mask,
                                const float* mean, const float* variance, float epsilon, int64_t m,
                                int64_t c, int slices, float* partial, float* grad_gamma,
                                float* grad_beta, cudaStream_t stream);
// grad_x = g' gamma inv_std with constant statistics, else through the batch's statistics:
// gamma inv_std (g' - grad_beta / m - xhat grad_gamma / m), from BatchNormParamGrads' sums.
cudaError_t BatchNormInputGrad(const float* x, const float* grad_y, const uint8_t* relu_mask,
                               const float* gamma, const float* mean, const float* variance,
                               float epsilon, const float* grad_gamma, const float* grad_beta,
                               bool statistics_are_constant, float* grad_x, int64_t m, int64_t c,
                               cudaStream_t stream);

// --- reduce_kernels.cu ----------------------------------------------------------
// out[k] = scale * reduce_{r} in[kept_offset(k) + reduced_offset(r)]: one block
// per output. `kept` maps an output index (its dims) to an input offset
// (stride_a); `reduced` likewise for the r_count reduced elements. With
// splits > 1 (GenericSplits) each output's elements are cut into `splits`
// slices, one block each, into partial [n_out, splits], then reduced over
// those: deterministic, no atomics.
constexpr int64_t kGenericSplitMin = 65536;  // fewer elements an output: one block
int GenericSplits(int64_t n_out, int64_t r_count);
cudaError_t ReduceGeneric(ReduceKind op, const float* in, float* out, int64_t n_out,
                          const StridedIndex& kept, const StridedIndex& reduced, int64_t r_count,
                          float scale, int splits, float* partial, cudaStream_t stream);
// out[0] = scale * the sum of in[0, n), plus out[0] when `accumulate` (a metric's batch total
// added to its running total, a loss's reduction), with the bits of ReduceGeneric over all of in
// (then Axpby(1, ., 1, out) when accumulating): one launch, or with splits = GenericSplits(1, n)
// > 1 two, through partial [splits].
cudaError_t ScaledSum(const float* in, int64_t n, float scale, bool accumulate, int splits,
                      float* partial, float* out, cudaStream_t stream);
// in [k1, r, k2] reduced over r into [k1, k2], columns coalesced. With
// splits > 1 the rows are cut into `splits` slices whose partial results go to
// partial [splits, k1, k2] (then reduced over its first dim); else straight to
// out. Deterministic: no atomics.
// How many slices ReduceColumns should cut r into: enough blocks to fill the
// device, slices of at least 64 rows.
int ColumnSplits(int64_t k1, int64_t r, int64_t k2);
cudaError_t ReduceColumns(ReduceKind op, const float* in, float* out, int64_t k1, int64_t r,
                          int64_t k2, int splits, float* partial, float scale, cudaStream_t stream);

// --- softmax_kernels.cu ---------------------------------------------------------
// Row-wise over [rows, c].
cudaError_t Softmax(const float* x, float* y, int64_t rows, int64_t c, cudaStream_t stream);
cudaError_t SoftmaxBackward(const float* y, const float* grad_y, float* grad_x, int64_t rows,
                            int64_t c, cudaStream_t stream);
cudaError_t SparseSoftmaxCrossEntropy(const float* logits, const int64_t* labels, float* loss,
                                      float* probs, int64_t rows, int64_t c, cudaStream_t stream);
// grad_logits row n = (scale * grad_loss[one_gradient ? 0 : n]) * (probs - one_hot(label)).
cudaError_t SparseSoftmaxCrossEntropyBackward(const float* probs, const int64_t* labels,
                                              const float* grad_loss, bool one_gradient,
                                              float scale, float* grad_logits, int64_t rows,
                                              int64_t c, cudaStream_t stream);

// --- optimizer_kernels.cu --------------------------------------------------------
// `step` points at the update's per-step scalars on the device (backend.h's StepScalar: rate,
// decay, Nadam's gradient coefficient and v_scale), read by the kernel when it runs, so that a
// captured graph reads each step's values. The decay (lr * weight_decay) is applied first,
// w -= decay * w.
constexpr int kStepRate = 0, kStepDecay = 1, kStepGradientCoefficient = 2, kStepVScale = 3;
// optimizer_update.h's UpdateKind, UpdateRule and slot order, repeated for the .cu files.
enum class UpdateKind : int { kSgd, kAdam, kRmsprop, kAdagrad, kAdadelta, kAdamax, kNadam };
struct UpdateConstants {
  UpdateKind kind = UpdateKind::kSgd;
  float momentum = 0;
  bool nesterov = false;
  float beta_1 = 0, beta_2 = 0, rho = 0, epsilon = 0;
};
// A variable, its gradient and its slots (null where the rule keeps none: SGD's velocity without
// momentum, RMSprop's average gradient unless centered and its momentum slot at momentum 0).
struct UpdateTensor {
  float* w = nullptr;
  const float* g = nullptr;
  float* slots[3] = {};
  int64_t n = 0;
};
// Updates vars[0, count) in as few launches as the kernel's argument block allows (up to 72
// variables a launch), each block of a launch taking a piece of one variable.
cudaError_t OptimizerUpdate(const UpdateConstants& rule, const UpdateTensor* vars, int count,
                            const float* step, cudaStream_t stream);

// --- label_kernels.cu -----------------------------------------------------------------
// out[i] = labels[i] (int32 or int64) where it lies in [0, classes), else 0;
// *invalid (zeroed first) = how many did not.
cudaError_t CastLabels(const void* labels, bool labels_int32, int64_t n, int64_t classes,
                       int64_t* out, float* invalid, cudaStream_t stream);
// out[i] = 1 when labels[i] is among the top k of predictions row i (fewer
// than k scores strictly above it, every score finite), or with
// first_max_only when it is the row's first maximum; else 0.
cudaError_t InTopK(const float* predictions, const void* labels, bool labels_int32, int64_t n,
                   int64_t c, int k, bool first_max_only, float* out, cudaStream_t stream);

// out[i] = the index of the first maximum (or first NaN) of x's row i [rows, c].
cudaError_t ArgMax(const float* x, int64_t rows, int64_t c, int64_t* out, cudaStream_t stream);

// --- pool_kernels.cu ---------------------------------------------------------------
struct PoolParams {
  bool max = true;  // else average excluding padding
  int64_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0;
  int64_t window_h = 1, window_w = 1, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
};
// NHWC. For max pooling `argmax` [n, oh, ow, c] receives the flat position
// (ih * w + iw) of each output's maximum; unused (may be null) for average.
cudaError_t PoolForward(const PoolParams& p, const float* in, float* out, int32_t* argmax,
                        cudaStream_t stream);
// Gathers, for every input element, the gradients of the windows holding it.
cudaError_t PoolBackward(const PoolParams& p, const float* grad_out, const int32_t* argmax,
                         float* grad_in, cudaStream_t stream);

// --- layout_kernels.cu ---------------------------------------------------------------
// out [n, h + top + bottom, w + left + right, c] = in [n, h, w, c] surrounded
// by zeros.
cudaError_t PadNhwc(const float* in, float* out, int64_t n, int64_t h, int64_t w, int64_t c,
                    int64_t top, int64_t bottom, int64_t left, int64_t right, cudaStream_t stream);

}  // namespace sluice::train::backend::cuda::kernels

#endif  // SLUICE_TRAIN_BACKEND_CUDA_KERNELS_H_
