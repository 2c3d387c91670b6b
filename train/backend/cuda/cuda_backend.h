#ifndef SLUICE_TRAIN_BACKEND_CUDA_CUDA_BACKEND_H_
#define SLUICE_TRAIN_BACKEND_CUDA_CUDA_BACKEND_H_

#include <cublas_api.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "train/backend/backend.h"
#include "train/backend/cuda/device_allocator.h"
#include "train/backend/cuda/kernel_timer.h"
#include "train/backend/cuda/stream.h"

struct cublasContext;
struct cudnnContext;

namespace sluice::train::backend::cuda {

struct ConvPlan;

// CUDA devices visible to this process; 0 without a device or a driver.
int CudaDeviceCount();

// The training Backend on one CUDA device: cuBLAS for matmul, cuDNN for
// convolution and batch norm, our own kernels (the *_kernels.cu files) for
// pooling, elementwise ops, reductions, softmax and its loss, dropout and the
// optimizer updates. Memory comes from the device's caching DeviceAllocator.
//
// Every kernel is queued on the backend's one stream and returns without
// waiting (tensors freed meanwhile go back to the allocator's cache for that
// stream, so later work cannot overwrite memory still being read). Copies to
// or from the host wait for the stream: the host may read or reuse its side
// once Copy returns. Thread-safe.
//
// Dropout draws from a counter-based hash of (seed, element index): one seed
// and shape give one mask on this backend, not the CPU backend's mask (which
// comes from a sequential mt19937_64), as the Backend contract allows.
class CudaBackend final : public train::backend::Backend {
 public:
  struct Options {
    // TF32 tensor cores for float32 matmul and convolution (10-bit mantissa
    // products, fp32 accumulation). The defaults are PyTorch's.
    bool tf32_matmul = false;
    bool tf32_convolution = true;
    // The largest workspace a cuDNN convolution algorithm may use.
    size_t max_convolution_workspace_bytes = size_t{1} << 30;
    // On the first use of each convolution geometry and direction, time cuDNN's algorithms
    // (cudnnFind*Ex, as PyTorch's torch.backends.cudnn.benchmark = True) and keep the fastest,
    // instead of taking its heuristic's first choice. The shared backends take it from
    // SLUICE_CUDNN_BENCHMARK (0 turns it off).
    bool benchmark_convolutions = true;
    // The workspace that timing offers the algorithms (capped by
    // max_convolution_workspace_bytes): one that wants more is not timed, and so not chosen. The
    // shared backends take it from SLUICE_CUDNN_FIND_WORKSPACE_MB.
    size_t max_find_workspace_bytes = size_t{256} << 20;
  };

  // A backend of its own (own stream and library handles) on `device`.
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(int device, Options options);
  // The shared backend of `device` that BackendFor(Device::Cuda(device))
  // returns, made on first use with default options.
  static absl::StatusOr<CudaBackend*> ForDevice(int device);

  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  Device device() const override { return Device::Cuda(device_); }
  // The stream this thread's calls queue on: the backend's one stream, or, on a thread capturing
  // a graph (Capture), the capture's stream.
  cudaStream_t stream() const;
  DeviceAllocator& allocator() const { return allocator_; }
  const Options& options() const { return options_; }

  absl::StatusOr<Tensor> Allocate(DType dtype, const Shape& shape) override;
  absl::Status Copy(const Tensor& src, Tensor& dst) override;
  absl::Status Fill(Tensor& t, float value) override;
  absl::Status Axpby(float alpha, const Tensor& x, float beta, Tensor& y) override;
  absl::Status Synchronize() override;
  absl::Status ReleaseCachedMemory() override { return allocator_.EmptyCache(); }

  // Page-locked host memory (cudaHostAlloc), and copies from it on a stream of
  // their own that start after the compute stream's queued work (so a block
  // the allocator hands out again is written only once its readers are done).
  absl::StatusOr<Tensor> AllocateStaging(DType dtype, const Shape& shape) override;
  absl::StatusOr<std::shared_ptr<train::backend::Event>> CopyAsync(const Tensor& src,
                                                                   Tensor& dst) override;
  absl::Status WaitEvent(train::backend::Event& event) override;
  absl::StatusOr<std::shared_ptr<train::backend::Event>> RecordEvent() override;
  absl::Status OrderQueueAfterThis(uintptr_t queue) override;
  absl::Status OrderThisAfterQueue(uintptr_t queue) override;

  // CUDA graphs (cuda_graph.cc): `work` runs on a capture stream of its own, which only the
  // calling thread's calls of this backend queue on, and its allocations come from a pool that
  // stays the graph's (DeviceAllocator::Reserve). A graph launches on the backend's stream.
  bool CapturesGraphs() const override { return true; }
  absl::StatusOr<std::unique_ptr<train::backend::DeviceGraph>> Capture(
      const std::function<absl::Status()>& work) override;

  absl::Status MatMul(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b,
                      Tensor& out) override;
  absl::Status Conv2DForward(const train::backend::ConvGeometry& geo, const Tensor& input,
                             const Tensor& filter, Tensor& output) override;
  // The bias (and the ReLU) in one pass over the output after cuBLAS' or cuDNN's kernel, instead
  // of an add and a relu (and, for the convolutions, a temporary output).
  absl::Status MatMulBias(const Tensor& a, const Tensor& b, const Tensor& bias, bool relu,
                          Tensor& out) override;
  absl::Status Conv2DBiasForward(const train::backend::ConvGeometry& geo, const Tensor& input,
                                 const Tensor& filter, const Tensor& bias, Tensor& output) override;
  absl::Status Conv2DBiasReluForward(const train::backend::ConvGeometry& geo, const Tensor& input,
                                     const Tensor& filter, const Tensor& bias,
                                     Tensor& output) override;
  absl::Status Conv2DBackwardData(const train::backend::ConvGeometry& geo,
                                  const Tensor& grad_output, const Tensor& filter,
                                  Tensor& grad_input) override;
  absl::Status Conv2DBackwardFilter(const train::backend::ConvGeometry& geo, const Tensor& input,
                                    const Tensor& grad_output, Tensor& grad_filter) override;
  // Max pooling's workspace is an int32 [n, oh, ow, c] tensor of argmax
  // positions; average pooling needs none.
  absl::StatusOr<Tensor> Pool2DForward(const train::backend::PoolGeometry& geo, const Tensor& input,
                                       Tensor& output) override;
  absl::Status Pool2DBackward(const train::backend::PoolGeometry& geo, const Tensor& input,
                              const Tensor& output, const Tensor& workspace,
                              const Tensor& grad_output, Tensor& grad_input) override;
  absl::Status BatchNormForwardTraining(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                        float epsilon, Tensor& y, Tensor& mean,
                                        Tensor& variance) override;
  absl::Status BatchNormForwardInference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         const Tensor& mean, const Tensor& variance, float epsilon,
                                         Tensor& y) override;
  absl::Status BatchNormBackward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                 const Tensor& variance, const Tensor& grad_y, float epsilon,
                                 bool statistics_are_constant, Tensor& grad_x, Tensor& grad_gamma,
                                 Tensor& grad_beta) override;
  // The ReLU after a batch norm in its normalising pass, its mask (a byte an element) the
  // workspace; the backward reads the mask in its passes: no ReLU kernels either way.
  bool FusesBatchNormRelu() const override { return true; }
  int64_t BatchNormReluWorkspaceBytes(const Tensor& x) const override;
  absl::Status BatchNormReluForwardTraining(const Tensor& x, const Tensor& gamma,
                                            const Tensor& beta, float epsilon, Tensor& y,
                                            Tensor& mean, Tensor& variance,
                                            Tensor& workspace) override;
  absl::Status BatchNormReluBackward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                     const Tensor& variance, const Tensor& workspace,
                                     const Tensor& grad_y, float epsilon, Tensor& grad_x,
                                     Tensor& grad_gamma, Tensor& grad_beta) override;

  absl::Status Binary(train::backend::BinaryOp op, const Tensor& a, const Tensor& b,
                      Tensor& out) override;
  absl::Status BinaryBackward(train::backend::BinaryOp op, const Tensor& a, const Tensor& b,
                              const Tensor& grad_out, Tensor* grad_a, Tensor* grad_b) override;
  absl::Status Unary(train::backend::UnaryOp op, const Tensor& x, Tensor& y) override;
  absl::Status UnaryBackward(train::backend::UnaryOp op, const Tensor& x, const Tensor& y,
                             const Tensor& grad_y, Tensor& grad_x) override;
  absl::Status Cast(const Tensor& x, Tensor& y) override;
  absl::Status Dropout(const Tensor& x, float rate, uint64_t seed, Tensor& mask,
                       Tensor& out) override;
  absl::Status Reduce(train::backend::ReduceOp op, const Tensor& x,
                      const std::vector<bool>& reduced, float scale, Tensor& out) override;
  absl::Status AccumulateSum(const Tensor& x, float scale, Tensor& total) override;
  absl::Status BroadcastTo(const Tensor& in, float scale, Tensor& out) override;
  absl::Status ReduceMaxBackward(const Tensor& x, const Tensor& max, const Tensor& grad_max,
                                 Tensor& grad_x) override;
  absl::Status ArgMax(const Tensor& x, Tensor& out) override;
  absl::Status Transpose(const Tensor& x, const std::vector<int>& perm, Tensor& out) override;
  absl::Status Concat(const std::vector<Tensor>& inputs, int axis, Tensor& out) override;
  absl::Status Split(const Tensor& x, int axis, std::vector<Tensor>& outputs) override;
  absl::Status Softmax(const Tensor& logits, Tensor& y) override;
  absl::Status SoftmaxBackward(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) override;
  absl::Status SparseSoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels, Tensor& loss,
                                         Tensor& probs, float scale, Tensor* reduced) override;
  absl::Status SparseSoftmaxCrossEntropyBackward(const Tensor& probs, const Tensor& labels,
                                                 const Tensor& grad_loss, float scale,
                                                 Tensor& grad_logits) override;
  absl::Status CastLabels(const Tensor& labels, int64_t num_classes, Tensor& labels64,
                          Tensor& invalid) override;
  absl::Status InTopK(const Tensor& predictions, const Tensor& labels, int k, bool first_max_only,
                      Tensor& out) override;
  absl::Status OptimizerUpdate(const UpdateRule& rule, absl::Span<const UpdateOperands> vars,
                               const Tensor& step) override;

  // Convolution plans made so far (one per direction and geometry), each with
  // the cuDNN algorithm chosen for it.
  size_t NumConvolutionPlans() const;

 private:
  enum class ConvDirection { kForward, kBackwardData, kBackwardFilter };

  // cuBLAS' compute type for the calling thread's precision policy.
  cublasComputeType_t MatMulComputeType() const;

  CudaBackend(int device, Options options, Stream stream, Stream copy_stream, cublasContext* cublas,
              cudnnContext* cudnn);

  friend class CudaGraph;

  // The thread's capture (Capture): which backend's calls go to which capture stream.
  struct CaptureTarget {
    const CudaBackend* backend = nullptr;
    cudaStream_t stream = nullptr;
  };
  static thread_local CaptureTarget capture_;
  bool Capturing() const { return capture_.backend == this; }
  // Times the op's work while the profiler records (KernelTimer), except while capturing: a
  // captured kernel runs later, inside the graph, which is timed as one span.
  KernelTimer::Scope Timed(const char* op) const;
  // Points cuBLAS and cuDNN at stream() (and cuBLAS at our workspace, which cublasSetStream
  // forgets). Call with library_mu_ held, before a library call.
  absl::Status BindLibrariesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(library_mu_);

  // Checks that every tensor lives on this backend's device (a null entry, an absent optional
  // operand, is skipped).
  absl::Status CheckTensors(const char* op, std::initializer_list<const Tensor*> tensors) const;
  // CheckTensors, then makes this backend's device current on the calling
  // thread; the op's work on the stream is timed while the Scope lives, when
  // the profiler records. `op` is a literal.
  absl::StatusOr<KernelTimer::Scope> Enter(const char* op,
                                           std::initializer_list<const Tensor*> tensors) const;
  // Cast's checks and kernel, without Enter: for an op that converts while it holds
  // library_mu_, since Enter's timer scope would take the kernel timer's lock after
  // library_mu_, the reverse of a timed op's order (a deadlock with the profiler on).
  absl::Status CastUntimed(const Tensor& x, Tensor& y);
  // out[0] = scale * the sum of x (plus out[0] when `accumulate`), with Reduce's bits.
  absl::Status ScaledSum(const Tensor& x, float scale, bool accumulate, Tensor& out);
  // out [.., c] += bias [c], then max(., 0) with `relu`.
  absl::Status AddBias(const char* op, const Tensor& bias, bool relu, Tensor& out);
  // Batch norm's training forward and its backward, with the fused ReLU's mask where
  // `relu_mask` is given (a workspace of BatchNormReluWorkspaceBytes).
  absl::Status BatchNormTraining(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                 float epsilon, Tensor& y, Tensor& mean, Tensor& variance,
                                 const Tensor* relu_mask);
  absl::Status BatchNormGradients(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                  const Tensor& variance, const Tensor* relu_mask,
                                  const Tensor& grad_y, float epsilon, bool statistics_are_constant,
                                  Tensor& grad_x, Tensor& grad_gamma, Tensor& grad_beta);
  // sum of `full` over the dims `grad` repeats along, times `scale`, into grad.
  absl::Status SumInto(const Tensor& full, float scale, Tensor& grad);
  // The gradients of BinaryOp::kMaximum (kMinimum).
  absl::Status SelectBackward(bool maximum, const Tensor& a, const Tensor& b,
                              const Tensor& grad_out, Tensor* grad_a, Tensor* grad_b);
  // The plan of `geo` for `direction` with `dtype` data (ConvDType), made (descriptors set up and
  // an algorithm chosen) on first use; `key` is their ConvKey, made once by the caller. Call with
  // library_mu_ held.
  absl::StatusOr<const ConvPlan*> GetConvPlan(ConvDirection direction,
                                              const train::backend::ConvGeometry& geo, DType dtype,
                                              const std::string& key);
  // The data type convolutions run in under the calling thread's precision policy: float16 or
  // bfloat16 under the mixed policies (cuDNN's pseudo-half configurations: 16-bit operands and
  // results, float32 sums), else float32. Their float32 operands are converted and their results
  // converted back, as PyTorch's autocast runs a convolution in float16.
  DType ConvDType() const;
  // The plan for `geo` and `direction` in ConvDType(), or in float32 where cuDNN has no 16-bit
  // algorithm for it (said once on stderr); `dtype` is set to the one chosen. Call with
  // library_mu_ held.
  absl::StatusOr<const ConvPlan*> ConvPlanFor(ConvDirection direction,
                                              const train::backend::ConvGeometry& geo, DType& dtype)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(library_mu_);
  // `t` (float32) as a convolution reads it in `dtype`: itself for float32, else a converted copy.
  absl::StatusOr<Tensor> ConvOperand(const Tensor& t, DType dtype);
  // The steps of GetConvPlan after the descriptors: for `direction`, the fastest algorithm cuDNN
  // times (Options::benchmark_convolutions; not while the stream is being captured) or else the
  // one it offers first, within the workspace limit, with its math type; and its workspace.
  absl::Status ChooseConvAlgorithm(ConvDirection direction, ConvPlan& plan);
  absl::StatusOr<size_t> ConvWorkspaceSize(ConvDirection direction, const ConvPlan& plan);
  // The input as cuDNN reads it: zero-padded on the sides where the geometry pads more than
  // cuDNN's symmetric padding does, and in `dtype` (ConvOperand); the input itself when neither
  // applies.
  absl::StatusOr<Tensor> ConvInput(const ConvPlan& plan, const train::backend::ConvGeometry& geo,
                                   const Tensor& input, DType dtype);
  // A workspace of the plan's size.
  absl::StatusOr<Tensor> ConvWorkspace(const ConvPlan& plan);
  absl::StatusOr<Tensor> FilterToOhwi(const Tensor& filter);

  const int device_;
  const Options options_;
  DeviceAllocator& allocator_;
  Stream stream_;
  Stream copy_stream_;  // host-to-device copies beside the kernels (CopyAsync)
  cublasContext* cublas_;
  cudnnContext* cudnn_;
  // cuBLAS and cuDNN handles are not to be used by two threads at once.
  mutable Mutex library_mu_;
  // The stream the handles are set to.
  cudaStream_t library_stream_ ABSL_GUARDED_BY(library_mu_) = nullptr;
  // cuBLAS' workspace, ours rather than its own pool, so that captured matmuls use memory that
  // outlives the capture (as PyTorch sets one). Every use is ordered on the backend's stream
  // (graphs launch there), so one serves all.
  Tensor cublas_workspace_;
  // Device spans for the profiler (train/backend/cuda/kernel_timer.h).
  mutable KernelTimer timer_;
  std::unordered_map<std::string, std::unique_ptr<ConvPlan>> conv_plans_
      ABSL_GUARDED_BY(library_mu_);
  // The 16-bit plans cuDNN could not make (ConvPlanFor runs those in float32).
  std::unordered_set<std::string> no_half_plan_ ABSL_GUARDED_BY(library_mu_);
};

// Registers the CUDA backend factory (train::backend::RegisterBackend) and the device count
// (RegisterDeviceCounter) for DeviceType::kCuda. The factory fails with "no CUDA device" on a
// machine without one. libsluice_cuda.so's sluice_plugin_register calls it when the plugin is
// loaded (train/backend/plugin.h).
void RegisterCudaBackend();

}  // namespace sluice::train::backend::cuda

#endif  // SLUICE_TRAIN_BACKEND_CUDA_CUDA_BACKEND_H_
