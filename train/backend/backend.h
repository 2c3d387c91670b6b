#ifndef SLUICE_TRAIN_BACKEND_BACKEND_H_
#define SLUICE_TRAIN_BACKEND_BACKEND_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/device.h"
#include "core/tensor.h"
#include "train/backend/optimizer_update.h"

namespace sluice::train::backend {

// The kernels the training ops run, for one device. An op checks its
// arguments, asks BackendFor() for the backend of its inputs' device, allocates
// its outputs there with Allocate() and calls kernels; its backward closure does
// the same. Kernels take tensors already shaped and allocated on the backend's
// device and write into the outputs they are given, so a backend never decides
// shapes: that stays in the op, shared by every backend.
//
// Kernels may run asynchronously (a CUDA backend queues them on its stream):
// tensor memory must stay alive until Synchronize() or until a later kernel on
// the same backend has consumed it, which the tape guarantees by holding every
// recorded tensor. The CPU backend runs each kernel to completion.
//
// Layouts are Keras': activations NHWC, convolution filters HWIO, matrices
// row-major. Every float kernel is float32.

// kMaximum/kMinimum propagate a NaN in either operand; on a tie (or a NaN in a) they pick a, and
// so does their gradient. kEqual and kGreater give 1.0f where a == b (a > b), else 0, and have
// no gradient (BinaryBackward writes zeros).
enum class BinaryOp { kAdd, kSub, kMul, kDiv, kMaximum, kMinimum, kEqual, kGreater };
// kAbs' gradient is sign(x), 0 at 0; kSoftplus is log1p(exp(-|x|)) + max(x, 0), which neither
// overflows nor loses the small values.
enum class UnaryOp { kRelu, kSigmoid, kTanh, kGelu, kExp, kLog, kAbs, kSoftplus, kSquare };
// Whether f'(x) follows from y = f(x) alone, so that the backward pass needs the output only.
constexpr bool UnaryGradientFromOutput(UnaryOp op) {
  return op == UnaryOp::kRelu || op == UnaryOp::kSigmoid || op == UnaryOp::kTanh ||
         op == UnaryOp::kExp;
}
enum class ReduceOp { kSum, kMax };
enum class PoolAlgorithm { kMax, kAvgExcludePadding };

// One 2-D convolution: input [n, h, w, c], filter [kh, kw, c / groups, o], output
// [n, oh, ow, o]; dilation counts from 1 (1 = dense), as in TF. With groups > 1 (which divides c
// and o) the channels split into that many groups, output channel j seeing only the input
// channels of its group j / (o / groups), as TF's grouped conv2d and Keras' Conv2D(groups=).
// groups = c is a depthwise convolution: output channel j = i * (o / c) + m reads input channel
// i alone, and Keras' DepthwiseConv2D kernel [kh, kw, c, m] is the filter [kh, kw, 1, c * m]
// with the same bytes.
struct ConvGeometry {
  int64_t n = 0, h = 0, w = 0, c = 0;
  int64_t kh = 0, kw = 0, o = 0;
  int64_t oh = 0, ow = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t groups = 1;
};

// One 2-D pooling: input [n, h, w, c], output [n, oh, ow, c].
struct PoolGeometry {
  PoolAlgorithm algorithm = PoolAlgorithm::kMax;
  int64_t n = 0, h = 0, w = 0, c = 0;
  int64_t oh = 0, ow = 0;
  int64_t window_h = 1, window_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
};

// A point in one backend's queue of work (a CUDA event). Shared: the thread
// that queued the work and the thread that waits for it may differ.
class Event {
 public:
  virtual ~Event() = default;
  // Blocks the calling thread until the work queued before the event is done.
  virtual absl::Status Synchronize() = 0;
};

// Device work recorded once and run again as one launch (a CUDA graph): what Backend::Capture
// made. Its kernels read and write the addresses they were captured with, so the tensors they
// touched must stay alive, and the memory they allocated stays the graph's until it is destroyed.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  // Queues the recorded work after the work queued on the backend so far; the host does not wait.
  virtual absl::Status Launch() = 0;
  // How many kernels and copies it holds.
  virtual size_t nodes() const = 0;
};

// The entries of an optimizer update's `step` tensor (Backend::SgdUpdate and the others).
enum StepScalar : int {
  kStepRate = 0,                 // the learning rate, or Adam's and Adamax's alpha, or Nadam's
                                 // momentum coefficient
  kStepDecay = 1,                // lr * weight_decay, or 0 where the variable is not decayed
  kStepGradientCoefficient = 2,  // Nadam's coefficient of the gradient
  kStepVScale = 3,               // Nadam's 1 / (1 - beta_2^t)
  kStepScalars = 4,              // the tensor's length
};

// OK when `step` is a float32 [kStepScalars] tensor on `w`'s device; `op` names the caller.
absl::Status CheckStepScalars(absl::string_view op, const Tensor& step, const Tensor& w);

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Device device() const = 0;

  // --- memory -------------------------------------------------------------
  // An uninitialised tensor on this backend's device.
  virtual absl::StatusOr<Tensor> Allocate(DType dtype, const Shape& shape) = 0;
  // Copies `src` into `dst` (same dtype and element count); either may be on
  // the host, the other on this device.
  virtual absl::Status Copy(const Tensor& src, Tensor& dst) = 0;
  // Sets every float32 element of `t` to `value`.
  virtual absl::Status Fill(Tensor& t, float value) = 0;
  // y = alpha * x + beta * y over float32 tensors of one shape (gradient
  // accumulation, moving averages, scaling in place). Where ReadsBFloat16Operands(), either may
  // be bfloat16 (the gradients of bfloat16 activations), computed in float32.
  virtual absl::Status Axpby(float alpha, const Tensor& x, float beta, Tensor& y) = 0;
  // Returns once every kernel queued so far has finished.
  virtual absl::Status Synchronize() = 0;
  // Hands the memory a caching allocator keeps idle back to the system (torch.cuda.empty_cache):
  // a traced step (train/function/) calls it when it has planned its arena, so that the blocks
  // its eager trace freed are not held beside the arena. The default caches nothing.
  virtual absl::Status ReleaseCachedMemory() { return absl::OkStatus(); }
  // Asked by ToHost while this backend traces (train/function/): an error when `t` is a value
  // the trace computes, whose host read a replay would not repeat. Not traced: OK.
  virtual absl::Status CheckHostRead(const Tensor& t) { return absl::OkStatus(); }

  // --- copies that overlap the compute (PrefetchToDevice) --------------------
  // These three may be called from a thread other than the one that queues
  // the kernels. The defaults suit a backend that runs each call to the end
  // (the CPU): a plain host tensor, a copy done at once, nothing to wait for.
  //
  // Host memory this device copies from fastest: page-locked on CUDA, where
  // only such memory lets a copy run beside the kernels.
  virtual absl::StatusOr<Tensor> AllocateStaging(DType dtype, const Shape& shape);
  // Starts copying host `src` into `dst` on this device on a queue of its
  // own, and returns the event of its end. The copy starts after the kernels
  // queued so far (dst may reuse memory they read). `src` must stay alive and
  // unchanged until the event is done.
  virtual absl::StatusOr<std::shared_ptr<Event>> CopyAsync(const Tensor& src, Tensor& dst);
  // Kernels queued from now on start after `event`, and the host does not
  // wait (CUDA: cudaStreamWaitEvent). Call before the first kernel that
  // reads a CopyAsync destination.
  virtual absl::Status WaitEvent(Event& event);
  // The event of the end of the work queued on this backend so far; the host does not wait.
  // A training loop waits for the one of a step a few steps back, so that the host runs at most
  // that far ahead of the device: a device-bound loop then waits on the device, where a profile
  // shows it, instead of wherever it next blocks (its input, whose copies queue behind the
  // kernels). The default (a backend that runs each call to the end: the CPU) is done already.
  virtual absl::StatusOr<std::shared_ptr<Event>> RecordEvent();

  // --- queues of other libraries (DLPack's stream exchange) ---------------------
  // `queue` is a queue of this device that another library puts its work on: on CUDA a
  // cudaStream_t, or DLPack's 1 and 2 for the legacy and the per-thread default stream (0 is
  // refused: DLPack calls it ambiguous). Neither call makes the host wait. The defaults suit a
  // backend that runs each call to the end (the CPU): there is nothing to order.
  //
  // Work queued on `queue` from now on starts after the work queued on this backend so far: a
  // consumer (PyTorch, JAX) may read what this backend wrote, without the host waiting.
  virtual absl::Status OrderQueueAfterThis(uintptr_t queue);
  // Work queued on this backend from now on starts after the work queued on `queue` so far: this
  // backend may reuse memory that a consumer's queued kernels still read.
  virtual absl::Status OrderThisAfterQueue(uintptr_t queue);

  // --- device graphs (a traced step's replay, train/function/program.h) ------------------
  // Whether Capture works: a backend that queues kernels on a device (CUDA) can record a sequence
  // of them and launch it again at the cost of one launch. A backend that runs each call to the
  // end (the CPU) has nothing to gain: the default says no, and its Capture fails.
  virtual bool CapturesGraphs() const { return false; }
  // Calls `work` on this thread with this backend in capture mode: the kernels `work` calls are
  // recorded into the returned graph, not run. Other threads' calls meanwhile are not captured.
  // `work` must not read device memory on the host or wait for the device (a capture error); its
  // host values (shapes, scalars, seeds) are frozen into the graph. Memory allocated while
  // capturing is kept for the graph and reused by no one else while it lives.
  virtual absl::StatusOr<std::unique_ptr<DeviceGraph>> Capture(
      const std::function<absl::Status()>& work);

  // --- dense linear algebra and convolution -------------------------------
  // Whether MatMul and the Conv2D kernels compute from bfloat16 operands under the current
  // precision policy (compute_precision.h): the CPU's under mixed_bfloat16.
  virtual bool ReadsBFloat16Operands() const { return false; }
  // Float32 `t` as those kernels read it: a bfloat16 copy where ReadsBFloat16Operands(), else `t`
  // itself. They accept either form. An op that feeds one tensor to several kernels (a
  // convolution's input to the forward and the filter gradient, the output gradient to both
  // gradients) converts it once, and keeps the half-size copy for its backward pass instead of
  // the float32 tensor.
  absl::StatusOr<Tensor> ComputeOperand(const Tensor& t);
  // out [m, n] = op(a) op(b), op() transposing when asked (read through
  // strides, never copied).
  virtual absl::Status MatMul(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b,
                              Tensor& out) = 0;
  // out [m, n] = a b + bias, then max(., 0) when `relu` (a NaN stays NaN, as in every ReLU
  // here): a dense layer's forward; a and b as MatMul reads them (untransposed), bias float32 [n]
  // added to every row. The default runs MatMul, an add and a relu; the CPU adds the bias inside
  // its matmul (oneDNN's bias), which saves a pass over the output. (oneDNN's ReLU post-op would
  // save another, but turns a NaN into 0.)
  virtual absl::Status MatMulBias(const Tensor& a, const Tensor& b, const Tensor& bias, bool relu,
                                  Tensor& out);
  virtual absl::Status Conv2DForward(const ConvGeometry& geo, const Tensor& input,
                                     const Tensor& filter, Tensor& output) = 0;
  virtual absl::Status Conv2DBackwardData(const ConvGeometry& geo, const Tensor& grad_output,
                                          const Tensor& filter, Tensor& grad_input) = 0;
  virtual absl::Status Conv2DBackwardFilter(const ConvGeometry& geo, const Tensor& input,
                                            const Tensor& grad_output, Tensor& grad_filter) = 0;
  // Conv2DForward with float32 `bias` [o] added at every output position, and
  // Conv2DBackwardFilter with grad_bias [o] = grad_output summed over its positions. The defaults
  // run the kernels above and an add or a sum; the CPU fuses them into its convolutions (oneDNN's
  // bias), which saves a pass over the output and one over its gradient.
  virtual absl::Status Conv2DBiasForward(const ConvGeometry& geo, const Tensor& input,
                                         const Tensor& filter, const Tensor& bias, Tensor& output);
  virtual absl::Status Conv2DBackwardFilterBias(const ConvGeometry& geo, const Tensor& input,
                                                const Tensor& grad_output, Tensor& grad_filter,
                                                Tensor& grad_bias);
  // Conv2DBiasForward, then max(., 0) in place (a NaN stays): a convolution and the ReLU after
  // it, `output` float32. The default runs the two, as the CPU does (oneDNN's ReLU post-op turns
  // a NaN into 0); a backend may fuse them.
  virtual absl::Status Conv2DBiasReluForward(const ConvGeometry& geo, const Tensor& input,
                                             const Tensor& filter, const Tensor& bias,
                                             Tensor& output);

  // --- pooling --------------------------------------------------------------
  // Returns the workspace the backward pass needs (max pooling's argmax on the
  // CPU; an empty tensor when the backend needs none), to be passed back to
  // Pool2DBackward with the same geometry.
  virtual absl::StatusOr<Tensor> Pool2DForward(const PoolGeometry& geo, const Tensor& input,
                                               Tensor& output) = 0;
  virtual absl::Status Pool2DBackward(const PoolGeometry& geo, const Tensor& input,
                                      const Tensor& output, const Tensor& workspace,
                                      const Tensor& grad_output, Tensor& grad_input) = 0;

  // --- batch normalisation over every axis but the last (channels) ----------
  // Training: writes y and the batch mean and biased variance [C].
  virtual absl::Status BatchNormForwardTraining(const Tensor& x, const Tensor& gamma,
                                                const Tensor& beta, float epsilon, Tensor& y,
                                                Tensor& mean, Tensor& variance) = 0;
  virtual absl::Status BatchNormForwardInference(const Tensor& x, const Tensor& gamma,
                                                 const Tensor& beta, const Tensor& mean,
                                                 const Tensor& variance, float epsilon,
                                                 Tensor& y) = 0;
  // Gradients given the statistics the forward used. `statistics_are_constant`
  // is true for inference (mean and variance were inputs, not functions of x).
  virtual absl::Status BatchNormBackward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                         const Tensor& variance, const Tensor& grad_y,
                                         float epsilon, bool statistics_are_constant,
                                         Tensor& grad_x, Tensor& grad_gamma, Tensor& grad_beta) = 0;
  // Batch norm (training) with a ReLU on its output in one pass, where FusesBatchNormRelu():
  // y = max(batch_norm(x), 0) and a workspace of WorkspaceBytes(x) (the ReLU's mask, uint8) that
  // the backward reads instead of y. It saves the ReLU's two passes over the activations, forward
  // and backward. ops::BatchNormReluTraining runs the two ops where a backend has no fused kernel,
  // and the defaults below refuse.
  virtual bool FusesBatchNormRelu() const { return false; }
  virtual int64_t BatchNormReluWorkspaceBytes(const Tensor& x) const;
  virtual absl::Status BatchNormReluForwardTraining(const Tensor& x, const Tensor& gamma,
                                                    const Tensor& beta, float epsilon, Tensor& y,
                                                    Tensor& mean, Tensor& variance,
                                                    Tensor& workspace);
  virtual absl::Status BatchNormReluBackward(const Tensor& x, const Tensor& gamma,
                                             const Tensor& mean, const Tensor& variance,
                                             const Tensor& workspace, const Tensor& grad_y,
                                             float epsilon, Tensor& grad_x, Tensor& grad_gamma,
                                             Tensor& grad_beta);

  // --- elementwise ----------------------------------------------------------
  // out = a (op) b with NumPy broadcasting; out has the broadcast shape.
  virtual absl::Status Binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) = 0;
  // The gradients of Binary for the operands asked for (non-null), each
  // summed down to its operand's shape.
  virtual absl::Status BinaryBackward(BinaryOp op, const Tensor& a, const Tensor& b,
                                      const Tensor& grad_out, Tensor* grad_a, Tensor* grad_b) = 0;
  // y = f(x) elementwise, float32.
  virtual absl::Status Unary(UnaryOp op, const Tensor& x, Tensor& y) = 0;
  // out = max(a + b, 0) in one pass, a residual block's tail (the sum in float32, rounded once
  // where out is bfloat16). a, b and out have one shape; each is float32 or, where
  // ReadsBFloat16Operands(), bfloat16. The default (float32 only) runs Binary then Unary.
  virtual absl::Status AddRelu(const Tensor& a, const Tensor& b, Tensor& out);
  // grad_a and grad_b, each in its own type, = grad_out where out > 0, else 0.
  virtual absl::Status AddReluBackward(const Tensor& out, const Tensor& grad_out, Tensor& grad_a,
                                       Tensor& grad_b);
  // grad_x = grad_y * f'(x), given x and y = f(x). For the ops of UnaryGradientFromOutput (relu,
  // sigmoid, tanh, exp) it must read y only: the tape keeps y alone and passes it as x too.
  virtual absl::Status UnaryBackward(UnaryOp op, const Tensor& x, const Tensor& y,
                                     const Tensor& grad_y, Tensor& grad_x) = 0;
  // y = x converted to y's dtype, each of float32, int32 and int64 (same element count). Float
  // to integer truncates toward zero and saturates at the integer's range, NaN giving 0 (as
  // CUDA's conversions do); int64 to int32 keeps the low 32 bits. A backend whose kernels read
  // bfloat16 operands also casts float32 to bfloat16 (rounding to nearest even) and back.
  virtual absl::Status Cast(const Tensor& x, Tensor& y) = 0;
  // Inverted dropout: mask = (u >= rate) / (1 - rate) with u uniform from
  // `seed` (dropout_draw.h); out = x * mask. The same seed and shape give the
  // same mask on every backend.
  virtual absl::Status Dropout(const Tensor& x, float rate, uint64_t seed, Tensor& mask,
                               Tensor& out) = 0;

  // --- reductions and data movement -----------------------------------------
  // out (x's rank, 1 along the dims where `reduced` is true) = reduction of x
  // over those dims, times `scale` (1/count gives a mean; ignored for kMax).
  virtual absl::Status Reduce(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced,
                              float scale, Tensor& out) = 0;
  // total (float32 [1]) += scale * the sum of every element of x (float32, any shape; an empty x
  // adds 0), with the bits of Reduce over all of x with `scale` followed by Axpby(1, that, 1,
  // total): a batch's sum added to a metric's running total in one kernel, not three.
  virtual absl::Status AccumulateSum(const Tensor& x, float scale, Tensor& total) = 0;
  // out = scale * in broadcast to out's shape (in has out's rank, 1 where it
  // repeats): the backward of a sum or mean.
  virtual absl::Status BroadcastTo(const Tensor& in, float scale, Tensor& out) = 0;
  // The backward of a max reduction: grad split evenly between tied maxima.
  virtual absl::Status ReduceMaxBackward(const Tensor& x, const Tensor& max, const Tensor& grad_max,
                                         Tensor& grad_x) = 0;
  // out int64 [rows] = the index of the first maximum of each row of float32 x [rows, c] (x
  // read as rows of its last dim; c >= 1). The first NaN of a row, if any, counts as its maximum.
  virtual absl::Status ArgMax(const Tensor& x, Tensor& out) = 0;
  // out dim i = x dim perm[i].
  virtual absl::Status Transpose(const Tensor& x, const std::vector<int>& perm, Tensor& out) = 0;
  // out = the inputs joined along `axis`; Split is its inverse.
  virtual absl::Status Concat(const std::vector<Tensor>& inputs, int axis, Tensor& out) = 0;
  virtual absl::Status Split(const Tensor& x, int axis, std::vector<Tensor>& outputs) = 0;

  // --- softmax and loss -----------------------------------------------------
  // Over the last axis.
  virtual absl::Status Softmax(const Tensor& logits, Tensor& y) = 0;
  virtual absl::Status SoftmaxBackward(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) = 0;
  // logits [N, C], labels int64 [N] (already checked to lie in [0, C)): the
  // per-example loss [N] and the softmax probabilities [N, C]. With `reduced` (float32 [1]) the
  // same call also writes reduced = scale * the sum of the per-example losses (1/N: their mean),
  // with the bits of Reduce over `loss` with `scale`: the loss's reduction in its own kernel.
  virtual absl::Status SparseSoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels,
                                                 Tensor& loss, Tensor& probs, float scale,
                                                 Tensor* reduced) = 0;
  // grad_logits row n = (scale * grad_loss[n]) * (probs - one_hot(labels)), the scaled gradient
  // rounded once (as BroadcastTo rounds it). grad_loss is [N], or [1] for every row: the
  // backward of the reduced loss, without broadcasting its gradient first.
  virtual absl::Status SparseSoftmaxCrossEntropyBackward(const Tensor& probs, const Tensor& labels,
                                                         const Tensor& grad_loss, float scale,
                                                         Tensor& grad_logits) = 0;

  // --- labels and metrics, so that no label leaves the device ---------------
  // labels64 int64 [N] = labels (int32 or int64 [N]), each outside
  // [0, num_classes) replaced by 0 and counted in `invalid` (float32 [1]): the
  // caller reads that one number when it chooses, not the labels.
  virtual absl::Status CastLabels(const Tensor& labels, int64_t num_classes, Tensor& labels64,
                                  Tensor& invalid) = 0;
  // out float32 [N] = 1 for a hit, else 0, given predictions [N, C] and labels
  // int32 or int64 [N]. tf.math.in_top_k: a hit when fewer than k classes
  // score strictly above the label's and the row is finite. With
  // `first_max_only` (k = 1): a hit when the label is the row's first maximum,
  // as Keras' SparseCategoricalAccuracy (argmax == label). A label outside
  // [0, C) is a miss.
  virtual absl::Status InTopK(const Tensor& predictions, const Tensor& labels, int k,
                              bool first_max_only, Tensor& out) = 0;

  // --- optimizer updates, fused (one pass over many variables) ----------------
  // Updates every variable of `vars` by `rule` in one pass over all of them and their slots
  // (PyTorch's multi-tensor "foreach" updates): one kernel for many variables, not one per
  // variable. `vars` are on this backend's device and share `step` (CheckUpdate).
  // What changes from step to step (the learning rate, the bias corrections, the weight decay)
  // is read by the kernel where it runs, from `step`: float32 [kStepScalars] on the variable's
  // device (StepScalar names its entries), written before each step. So a replayed or graphed
  // update uses each step's values, as PyTorch's "capturable" optimizers keep their step on the
  // device. `rule` holds the optimizer's constants. Every update applies
  // step[kStepDecay] (lr * weight_decay, or 0) first: w -= decay * w, as Keras applies weight
  // decay before update_step. Each element's arithmetic is the same however the variables are
  // grouped, so one call over many variables gives the bits of one call per variable.
  virtual absl::Status OptimizerUpdate(const UpdateRule& rule,
                                       absl::Span<const UpdateOperands> vars,
                                       const Tensor& step) = 0;

  // One variable's update by each rule (OptimizerUpdate of one variable):
  //
  // Keras SGD, rate = lr: with momentum, v = momentum v - lr g and w += v (Nesterov:
  // w += momentum v - lr g); without, w -= lr g. `velocity` may be null when momentum is 0.
  absl::Status SgdUpdate(Tensor& w, const Tensor& g, Tensor* velocity, const Tensor& step,
                         float momentum, bool nesterov);
  // Keras Adam, rate = alpha (the bias corrections folded in): m += (g - m)(1 - beta_1),
  // v += (g^2 - v)(1 - beta_2), w -= alpha m / (sqrt(v) + epsilon). AdamW is Adam with a decay.
  absl::Status AdamUpdate(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, const Tensor& step,
                          float beta_1, float beta_2, float epsilon);
  // Keras RMSprop, rate = lr: v = rho v + (1 - rho) g^2. Centered (`average_gradient` non-null):
  // a = rho a + (1 - rho) g, step = lr g / sqrt(v - a^2 + epsilon); else
  // step = lr g / sqrt(v + epsilon) (epsilon inside the root, unlike PyTorch). With a `momentum`
  // slot (non-null, momentum > 0): b = momentum b + step, w -= b; else w -= step.
  absl::Status RmspropUpdate(Tensor& w, const Tensor& g, Tensor& velocity, Tensor* average_gradient,
                             Tensor* momentum_slot, const Tensor& step, float rho, float momentum,
                             float epsilon);
  // Keras Adagrad, rate = lr: a += g^2, w -= lr g / sqrt(a + epsilon).
  absl::Status AdagradUpdate(Tensor& w, const Tensor& g, Tensor& accumulator, const Tensor& step,
                             float epsilon);
  // Keras Adadelta, rate = lr: a = rho a + (1 - rho) g^2,
  // d = -sqrt(ad + epsilon) / sqrt(a + epsilon) g, ad = rho ad + (1 - rho) d^2, w += lr d
  // (a: accumulated_grad, ad: accumulated_delta).
  absl::Status AdadeltaUpdate(Tensor& w, const Tensor& g, Tensor& accumulated_grad,
                              Tensor& accumulated_delta, const Tensor& step, float rho,
                              float epsilon);
  // Keras Adamax, rate = alpha = lr / (1 - beta_1^t): m += (g - m)(1 - beta_1),
  // u = max(beta_2 u, |g|), w -= alpha m / (u + epsilon).
  absl::Status AdamaxUpdate(Tensor& w, const Tensor& g, Tensor& m, Tensor& u, const Tensor& step,
                            float beta_1, float beta_2, float epsilon);
  // Keras Nadam: m += (g - m)(1 - beta_1), v += (g^2 - v)(1 - beta_2),
  // w -= (rate m + step[kStepGradientCoefficient] g) / (sqrt(step[kStepVScale] v) + epsilon).
  // The caller folds the learning rate and the momentum schedule into the two coefficients
  // (nadam.cc), and v_scale = 1 / (1 - beta_2^t).
  absl::Status NadamUpdate(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, const Tensor& step,
                           float beta_1, float beta_2, float epsilon);
};

// The backend for `device`: the CPU one always; another when one is registered for the device's
// type, after loading the type's plugin on first use (plugin.h: libsluice_cuda.so for
// Device::Cuda(i)); else an error saying why: "sluice was built without CUDA", the plugin's load
// failure ("...libsluice_cuda.so: libcudnn.so.9: cannot open shared object file..."), or the
// backend's own ("no CUDA device").
absl::StatusOr<Backend*> BackendFor(const Device& device);
// The backend of `tensors`, which must all live on one device; `op` names
// the caller in the error.
absl::StatusOr<Backend*> BackendFor(absl::string_view op,
                                    std::initializer_list<const Tensor*> tensors);

// How many devices of `type` this machine has: 1 for the CPU; for another type, what its
// registered counter says (0 without a device or a driver), after loading its plugin as
// BackendFor does, whose error it returns when that fails.
absl::StatusOr<int> DeviceCount(DeviceType type);

// How a plugin (train/backend/cuda/) plugs in: a factory per device type, returning the backend
// of a device index or an error ("no CUDA device"), and the number of devices. Registering again
// replaces.
using BackendFactory = std::function<absl::StatusOr<Backend*>(int index)>;
void RegisterBackend(DeviceType type, BackendFactory factory);
using DeviceCounter = std::function<int()>;
void RegisterDeviceCounter(DeviceType type, DeviceCounter counter);

}  // namespace sluice::train::backend

#endif  // SLUICE_TRAIN_BACKEND_BACKEND_H_
