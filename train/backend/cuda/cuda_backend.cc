// CudaBackend: creation and registration, memory, cuBLAS matmul, and the ops
// that run our own kernels. The cuDNN ops are in cuda_backend_cudnn.cc.

#include "train/backend/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/buffer.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "train/backend/broadcast.h"
#include "train/backend/compute_precision.h"
#include "train/backend/cuda/conv_plan.h"
#include "train/backend/cuda/cuda_check.h"
#include "train/backend/cuda/device_scope.h"
#include "train/backend/cuda/kernels.h"
#include "train/backend/cuda/strided_index.h"
#include "train/backend/require_float32.h"

namespace sluice::train::backend::cuda {
namespace {

using train::backend::AsRankOf;
using train::backend::BinaryOp;
using train::backend::ReduceOp;
using train::backend::RepeatedDims;
using train::backend::UnaryOp;

// cuBLAS' workspace: the 32 MiB its documentation recommends for Hopper, ample for older GPUs.
constexpr int64_t kCublasWorkspaceBytes = int64_t{32} << 20;

float* F(const Tensor& t) { return static_cast<float*>(const_cast<void*>(t.raw_data())); }

kernels::BinaryKind KindOf(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return kernels::BinaryKind::kAdd;
    case BinaryOp::kSub:
      return kernels::BinaryKind::kSub;
    case BinaryOp::kMul:
      return kernels::BinaryKind::kMul;
    case BinaryOp::kMaximum:
      return kernels::BinaryKind::kMaximum;
    case BinaryOp::kMinimum:
      return kernels::BinaryKind::kMinimum;
    case BinaryOp::kEqual:
      return kernels::BinaryKind::kEqualMask;
    case BinaryOp::kGreater:
      return kernels::BinaryKind::kGreater;
    case BinaryOp::kDiv:
      break;
  }
  return kernels::BinaryKind::kDiv;
}

kernels::UnaryKind KindOf(UnaryOp op) {
  switch (op) {
    case UnaryOp::kRelu:
      return kernels::UnaryKind::kRelu;
    case UnaryOp::kSigmoid:
      return kernels::UnaryKind::kSigmoid;
    case UnaryOp::kTanh:
      return kernels::UnaryKind::kTanh;
    case UnaryOp::kExp:
      return kernels::UnaryKind::kExp;
    case UnaryOp::kLog:
      return kernels::UnaryKind::kLog;
    case UnaryOp::kAbs:
      return kernels::UnaryKind::kAbs;
    case UnaryOp::kSoftplus:
      return kernels::UnaryKind::kSoftplus;
    case UnaryOp::kSquare:
      return kernels::UnaryKind::kSquare;
    case UnaryOp::kGelu:
      break;
  }
  return kernels::UnaryKind::kGelu;
}

absl::StatusOr<kernels::CastType> CastTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return kernels::CastType::kFloat32;
    case DType::kInt32:
      return kernels::CastType::kInt32;
    case DType::kInt64:
      return kernels::CastType::kInt64;
    case DType::kFloat16:
      return kernels::CastType::kFloat16;
    case DType::kBFloat16:
      return kernels::CastType::kBFloat16;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("CudaBackend::Cast: float32, int32, int64, float16 or bfloat16 only, got ",
                       DTypeName(dtype)));
  }
}

int64_t Rows(const Tensor& t) {
  const int64_t c = t.rank() == 0 ? 1 : t.dim(t.rank() - 1);
  return c == 0 ? 0 : t.num_elements() / c;
}

absl::Status RequireInt(int64_t v, absl::string_view what) {
  if (v > INT_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " = ", v, " exceeds the 32-bit sizes cuBLAS/cuDNN take"));
  }
  return absl::OkStatus();
}

// Guards the process-wide table of shared backends.
struct SharedBackends {
  Mutex mu;
  std::unordered_map<int, std::unique_ptr<CudaBackend>> backends ABSL_GUARDED_BY(mu);
};
SharedBackends& Shared() {
  static SharedBackends* shared = new SharedBackends;  // never destroyed
  return *shared;
}

}  // namespace

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not sticky, clear it
    return 0;
  }
  return count;
}

CudaBackend::CudaBackend(int device, Options options, Stream stream, Stream copy_stream,
                         cublasContext* cublas, cudnnContext* cudnn)
    : device_(device),
      options_(options),
      allocator_(DeviceAllocator::ForDevice(device)),
      stream_(std::move(stream)),
      copy_stream_(std::move(copy_stream)),
      cublas_(cublas),
      cudnn_(cudnn),
      timer_(device) {}

CudaBackend::~CudaBackend() {
  conv_plans_.clear();
  if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
}

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(int device, Options options) {
  const int count = CudaDeviceCount();
  if (count == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no CUDA device: cuda:", device,
        " was asked for but the CUDA runtime finds no device on this machine (or no driver)"));
  }
  if (device < 0 || device >= count) {
    return absl::InvalidArgumentError(absl::StrCat("no CUDA device cuda:", device,
                                                   ": this machine has ", count,
                                                   " (cuda:0 to cuda:", count - 1, ")"));
  }
  SLUICE_ASSIGN_OR_RETURN(Stream stream, Stream::Create(device));
  SLUICE_ASSIGN_OR_RETURN(Stream copy_stream, Stream::Create(device));
  cublasHandle_t cublas = nullptr;
  CUBLAS_RETURN_IF_ERROR(cublasCreate(&cublas));
  cudnnHandle_t cudnn = nullptr;
  const cudnnStatus_t cudnn_status = cudnnCreate(&cudnn);
  if (cudnn_status != CUDNN_STATUS_SUCCESS) {
    cublasDestroy(cublas);
    return CudnnStatus(cudnn_status, "cudnnCreate(&cudnn)", __FILE__, __LINE__);
  }
  std::unique_ptr<CudaBackend> backend(
      new CudaBackend(device, options, std::move(stream), std::move(copy_stream), cublas, cudnn));
  CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(
      cublas, options.tf32_matmul ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  SLUICE_ASSIGN_OR_RETURN(backend->cublas_workspace_,
                          backend->allocator_.AllocateTensor(
                              DType::kUint8, Shape{kCublasWorkspaceBytes}, backend->stream()));
  {
    MutexLock lock(&backend->library_mu_);
    SLUICE_RETURN_IF_ERROR(backend->BindLibrariesLocked());
  }
  return backend;
}

absl::StatusOr<CudaBackend*> CudaBackend::ForDevice(int device) {
  SharedBackends& shared = Shared();
  MutexLock lock(&shared.mu);
  auto it = shared.backends.find(device);
  if (it != shared.backends.end()) return it->second.get();
  Options options;
  const char* benchmark = std::getenv("SLUICE_CUDNN_BENCHMARK");
  if (benchmark != nullptr && std::string_view(benchmark) == "0") {
    options.benchmark_convolutions = false;
  }
  // Which algorithms timing may pick: the device check compares 256 MiB (the default) with more.
  if (const char* find_mb = std::getenv("SLUICE_CUDNN_FIND_WORKSPACE_MB"); find_mb != nullptr) {
    int64_t mb = 0;
    if (!absl::SimpleAtoi(find_mb, &mb) || mb < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SLUICE_CUDNN_FIND_WORKSPACE_MB must be a number of MiB >= 0, got '", find_mb, "'"));
    }
    options.max_find_workspace_bytes = static_cast<size_t>(mb) << 20;
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> backend, Create(device, options));
  CudaBackend* raw = backend.get();
  // Kept for the life of the process: tensors and tape closures hold raw
  // pointers to it.
  shared.backends.emplace(device, std::move(backend));
  return raw;
}

void RegisterCudaBackend() {
  train::backend::RegisterBackend(
      DeviceType::kCuda, [](int index) -> absl::StatusOr<train::backend::Backend*> {
        SLUICE_ASSIGN_OR_RETURN(CudaBackend * backend, CudaBackend::ForDevice(index));
        return backend;
      });
  train::backend::RegisterDeviceCounter(DeviceType::kCuda, CudaDeviceCount);
}

absl::Status CudaBackend::CheckTensors(const char* op,
                                       std::initializer_list<const Tensor*> tensors) const {
  for (const Tensor* t : tensors) {
    if (t != nullptr && !(t->device() == Device::Cuda(device_))) {
      return absl::InvalidArgumentError(absl::StrCat("CudaBackend::", op, ": a tensor is on ",
                                                     t->device().DebugString(),
                                                     ", not cuda:", device_));
    }
  }
  return absl::OkStatus();
}

thread_local CudaBackend::CaptureTarget CudaBackend::capture_;

cudaStream_t CudaBackend::stream() const { return Capturing() ? capture_.stream : stream_.get(); }

KernelTimer::Scope CudaBackend::Timed(const char* op) const {
  if (Capturing()) return KernelTimer::Scope();
  return timer_.Time(op, stream_);
}

absl::Status CudaBackend::BindLibrariesLocked() {
  const cudaStream_t s = stream();
  if (s == library_stream_) return absl::OkStatus();
  CUBLAS_RETURN_IF_ERROR(cublasSetStream(cublas_, s));
  CUBLAS_RETURN_IF_ERROR(
      cublasSetWorkspace(cublas_, cublas_workspace_.raw_data(), cublas_workspace_.byte_size()));
  CUDNN_RETURN_IF_ERROR(cudnnSetStream(cudnn_, s));
  library_stream_ = s;
  return absl::OkStatus();
}

absl::StatusOr<KernelTimer::Scope> CudaBackend::Enter(
    const char* op, std::initializer_list<const Tensor*> tensors) const {
  SLUICE_RETURN_IF_ERROR(CheckTensors(op, tensors));
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  return Timed(op);
}

// --- memory -----------------------------------------------------------------------

absl::StatusOr<Tensor> CudaBackend::Allocate(DType dtype, const Shape& shape) {
  return allocator_.AllocateTensor(dtype, shape, stream());
}

absl::Status CudaBackend::Copy(const Tensor& src, Tensor& dst) {
  const Device here = Device::Cuda(device_);
  const bool src_ok = src.device().is_cpu() || src.device() == here;
  const bool dst_ok = dst.device().is_cpu() || dst.device() == here;
  if (src.dtype() != dst.dtype() || src.num_elements() != dst.num_elements() || !src_ok ||
      !dst_ok || src.dtype() == DType::kBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CudaBackend::Copy: want two numeric tensors of one dtype and size, each on the CPU or ",
        here.DebugString(), ", got ", DTypeName(src.dtype()), src.shape().DebugString(), " on ",
        src.device().DebugString(), " and ", DTypeName(dst.dtype()), dst.shape().DebugString(),
        " on ", dst.device().DebugString()));
  }
  const size_t bytes = src.byte_size();
  if (bytes == 0) return absl::OkStatus();
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  const bool src_host = src.device().is_cpu(), dst_host = dst.device().is_cpu();
  const cudaMemcpyKind kind = src_host
                                  ? (dst_host ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
                                  : (dst_host ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
  const KernelTimer::Scope timed = Timed("Copy");
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), bytes, kind, stream()));
  // The host side is the caller's again once Copy returns: wait for the copy.
  if (src_host || dst_host) CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::Fill(Tensor& t, float value) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("Fill", {&t}));
  SLUICE_RETURN_IF_ERROR(train::backend::RequireFloat32(t, "CudaBackend::Fill", "the tensor"));
  CUDA_RETURN_IF_ERROR(kernels::Fill(F(t), t.num_elements(), value, stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::Axpby(float alpha, const Tensor& x, float beta, Tensor& y) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("Axpby", {&x, &y}));
  if (x.dtype() != DType::kFloat32 || y.dtype() != DType::kFloat32 || x.shape() != y.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CudaBackend::Axpby: want two float32 tensors of one shape, got ", DTypeName(x.dtype()),
        x.shape().DebugString(), " and ", DTypeName(y.dtype()), y.shape().DebugString()));
  }
  CUDA_RETURN_IF_ERROR(kernels::Axpby(alpha, F(x), beta, F(y), y.num_elements(), stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::Synchronize() {
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  return stream_.Synchronize();
}

namespace {

// A CUDA event of this backend: the end of one CopyAsync on the copy stream, or of the work
// queued on the compute stream (RecordEvent).
class CopyEvent final : public train::backend::Event {
 public:
  CopyEvent(int device, cuda::Event event) : device_(device), event_(std::move(event)) {}
  absl::Status Synchronize() override {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    return event_.Synchronize();
  }
  int device() const { return device_; }
  const cuda::Event& event() const { return event_; }

 private:
  int device_;
  cuda::Event event_;
};

}  // namespace

absl::StatusOr<Tensor> CudaBackend::AllocateStaging(DType dtype, const Shape& shape) {
  if (dtype == DType::kBytes) {
    return absl::InvalidArgumentError(
        "CudaBackend::AllocateStaging: bytes tensors stay on the host");
  }
  const size_t bytes =
      std::max<size_t>(1, static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype));
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  void* p = nullptr;
  CUDA_RETURN_IF_ERROR(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  auto buffer = Buffer::Wrap(p, bytes, Device::Cpu(), [](void* q) { cudaFreeHost(q); });
  return Tensor::FromBuffer(dtype, shape, std::move(buffer));
}

absl::StatusOr<std::shared_ptr<train::backend::Event>> CudaBackend::CopyAsync(const Tensor& src,
                                                                              Tensor& dst) {
  if (!src.device().is_cpu() || !(dst.device() == Device::Cuda(device_)) ||
      src.dtype() != dst.dtype() || src.num_elements() != dst.num_elements() ||
      src.dtype() == DType::kBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CudaBackend::CopyAsync: want a numeric host tensor and one on cuda:", device_,
        " of one dtype and size, got ", DTypeName(src.dtype()), src.shape().DebugString(), " on ",
        src.device().DebugString(), " and ", DTypeName(dst.dtype()), dst.shape().DebugString(),
        " on ", dst.device().DebugString()));
  }
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  // dst's block comes from the compute stream's cache: kernels queued there may still read it.
  SLUICE_ASSIGN_OR_RETURN(Event after_compute, Event::Create(device_));
  SLUICE_RETURN_IF_ERROR(after_compute.Record(stream_));
  SLUICE_RETURN_IF_ERROR(copy_stream_.Wait(after_compute));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), src.byte_size(),
                                       cudaMemcpyHostToDevice, copy_stream_.get()));
  SLUICE_ASSIGN_OR_RETURN(Event done, Event::Create(device_));
  SLUICE_RETURN_IF_ERROR(done.Record(copy_stream_));
  return std::shared_ptr<train::backend::Event>(
      std::make_shared<CopyEvent>(device_, std::move(done)));
}

absl::StatusOr<std::shared_ptr<train::backend::Event>> CudaBackend::RecordEvent() {
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  SLUICE_ASSIGN_OR_RETURN(Event done, Event::Create(device_));
  // The backend's stream: a training loop records between steps, never while capturing.
  SLUICE_RETURN_IF_ERROR(done.Record(stream_));
  return std::shared_ptr<train::backend::Event>(
      std::make_shared<CopyEvent>(device_, std::move(done)));
}

absl::Status CudaBackend::WaitEvent(train::backend::Event& event) {
  auto* copy = dynamic_cast<CopyEvent*>(&event);
  if (copy == nullptr || copy->device() != device_) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaBackend::WaitEvent: not an event of cuda:", device_));
  }
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  return stream_.Wait(copy->event());
}

namespace {

// The stream DLPack's `queue` names (1 and 2 are the default streams), or an error for 0.
absl::StatusOr<cudaStream_t> ForeignStream(uintptr_t queue) {
  if (queue == 0) {
    return absl::InvalidArgumentError(
        "stream 0 is ambiguous (DLPack): pass 1 for the legacy default stream, 2 for the "
        "per-thread one, or a cudaStream_t");
  }
  if (queue == 1) return cudaStreamLegacy;
  if (queue == 2) return cudaStreamPerThread;
  return reinterpret_cast<cudaStream_t>(queue);
}

}  // namespace

absl::Status CudaBackend::OrderQueueAfterThis(uintptr_t queue) {
  SLUICE_ASSIGN_OR_RETURN(cudaStream_t foreign, ForeignStream(queue));
  const DeviceScope scope(device_);  // a consumer's thread keeps its own current device
  CUDA_RETURN_IF_ERROR(scope.status());
  SLUICE_ASSIGN_OR_RETURN(Event ours, Event::Create(device_));
  SLUICE_RETURN_IF_ERROR(ours.Record(stream_));
  // The event may be destroyed at once: a wait already queued keeps what it needs.
  CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(foreign, ours.get(), 0));
  return absl::OkStatus();
}

absl::Status CudaBackend::OrderThisAfterQueue(uintptr_t queue) {
  SLUICE_ASSIGN_OR_RETURN(cudaStream_t foreign, ForeignStream(queue));
  const DeviceScope scope(device_);  // a consumer's thread keeps its own current device
  CUDA_RETURN_IF_ERROR(scope.status());
  SLUICE_ASSIGN_OR_RETURN(Event theirs, Event::Create(device_));
  CUDA_RETURN_IF_ERROR(cudaEventRecord(theirs.get(), foreign));
  return stream_.Wait(theirs);
}

size_t CudaBackend::NumConvolutionPlans() const {
  MutexLock lock(&library_mu_);
  return conv_plans_.size();
}

// --- matmul -------------------------------------------------------------------------

// float32 in memory; the mixed-precision policies let the tensor cores multiply in 16 bits and
// sum in float32 (compute_precision.h).
cublasComputeType_t CudaBackend::MatMulComputeType() const {
  switch (train::backend::CurrentPrecision()) {
    case train::backend::Precision::kMixedBFloat16:
      return CUBLAS_COMPUTE_32F_FAST_16BF;
    case train::backend::Precision::kMixedFloat16:
      return CUBLAS_COMPUTE_32F_FAST_16F;
    case train::backend::Precision::kFloat32:
      break;
  }
  return options_.tf32_matmul ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

absl::Status CudaBackend::MatMul(const Tensor& a, bool transpose_a, const Tensor& b,
                                 bool transpose_b, Tensor& out) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("MatMul", {&a, &b, &out}));
  const int64_t m = out.dim(0), n = out.dim(1);
  const int64_t k = transpose_a ? a.dim(0) : a.dim(1);
  if (m * n == 0) return absl::OkStatus();
  if (k == 0) return Fill(out, 0.0f);
  SLUICE_RETURN_IF_ERROR(RequireInt(m, "MatMul m"));
  SLUICE_RETURN_IF_ERROR(RequireInt(n, "MatMul n"));
  SLUICE_RETURN_IF_ERROR(RequireInt(k, "MatMul k"));
  // cuBLAS is column-major: a row-major [r, c] matrix is its transpose
  // there, so out^T [n, m] = op(b)^T op(a)^T is computed with b first.
  const int lda = static_cast<int>(transpose_a ? m : k);
  const int ldb = static_cast<int>(transpose_b ? k : n);
  const float one = 1.0f, zero = 0.0f;
  MutexLock lock(&library_mu_);
  SLUICE_RETURN_IF_ERROR(BindLibrariesLocked());
  CUBLAS_RETURN_IF_ERROR(cublasGemmEx(
      cublas_, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N,
      static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &one, b.raw_data(), CUDA_R_32F,
      ldb, a.raw_data(), CUDA_R_32F, lda, &zero, out.raw_data(), CUDA_R_32F, static_cast<int>(n),
      MatMulComputeType(), CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

absl::Status CudaBackend::AddBias(const char* op, const Tensor& bias, bool relu, Tensor& out) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("BiasActivation", {&bias, &out}));
  SLUICE_RETURN_IF_ERROR(train::backend::RequireFloat32(out, op, "the output"));
  SLUICE_RETURN_IF_ERROR(train::backend::RequireFloat32(bias, op, "the bias"));
  const int64_t c = out.rank() == 0 ? 1 : out.dim(out.rank() - 1);
  if (bias.num_elements() != c) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": the bias has ", bias.num_elements(),
                                                   " elements, the output's rows ", c));
  }
  CUDA_RETURN_IF_ERROR(
      kernels::BiasActivation(F(out), F(bias), out.num_elements(), c, relu, stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::MatMulBias(const Tensor& a, const Tensor& b, const Tensor& bias,
                                     bool relu, Tensor& out) {
  SLUICE_RETURN_IF_ERROR(MatMul(a, false, b, false, out));
  return AddBias("MatMulBias", bias, relu, out);
}

// --- pooling (own kernels: cuDNN cannot pad asymmetrically) ----------------------------

namespace {
kernels::PoolParams ToParams(const train::backend::PoolGeometry& g) {
  kernels::PoolParams p;
  p.max = g.algorithm == train::backend::PoolAlgorithm::kMax;
  p.n = g.n;
  p.h = g.h;
  p.w = g.w;
  p.c = g.c;
  p.oh = g.oh;
  p.ow = g.ow;
  p.window_h = g.window_h;
  p.window_w = g.window_w;
  p.stride_h = g.stride_h;
  p.stride_w = g.stride_w;
  p.pad_top = g.pad_top;
  p.pad_left = g.pad_left;
  return p;
}
}  // namespace

absl::StatusOr<Tensor> CudaBackend::Pool2DForward(const train::backend::PoolGeometry& geo,
                                                  const Tensor& input, Tensor& output) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed,
                          Enter("Pool2DForward", {&input, &output}));
  const kernels::PoolParams p = ToParams(geo);
  Tensor workspace;
  if (p.max) {
    if (geo.h * geo.w > INT_MAX) return RequireInt(geo.h * geo.w, "Pool2D h * w");
    SLUICE_ASSIGN_OR_RETURN(workspace,
                            Allocate(DType::kInt32, Shape{geo.n, geo.oh, geo.ow, geo.c}));
  }
  CUDA_RETURN_IF_ERROR(kernels::PoolForward(p, F(input), F(output),
                                            p.max ? workspace.data<int32_t>() : nullptr, stream()));
  return workspace;
}

absl::Status CudaBackend::Pool2DBackward(const train::backend::PoolGeometry& geo,
                                         const Tensor& input, const Tensor& output,
                                         const Tensor& workspace, const Tensor& grad_output,
                                         Tensor& grad_input) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed,
                          Enter("Pool2DBackward", {&grad_output, &grad_input}));
  const kernels::PoolParams p = ToParams(geo);
  const int32_t* argmax = nullptr;
  if (p.max) {
    if (workspace.dtype() != DType::kInt32 ||
        workspace.num_elements() != geo.n * geo.oh * geo.ow * geo.c ||
        !(workspace.device() == Device::Cuda(device_))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CudaBackend::Pool2DBackward: max pooling needs the int32 argmax workspace of its "
          "forward, got ",
          DTypeName(workspace.dtype()), workspace.shape().DebugString(), " on ",
          workspace.device().DebugString()));
    }
    argmax = workspace.data<int32_t>();
  }
  CUDA_RETURN_IF_ERROR(kernels::PoolBackward(p, F(grad_output), argmax, F(grad_input), stream()));
  return absl::OkStatus();
}

// --- elementwise ------------------------------------------------------------------------

absl::Status CudaBackend::Binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("Binary", {&a, &b, &out}));
  if (out.num_elements() == 0) return absl::OkStatus();
  const bool contiguous = a.shape() == out.shape() && b.shape() == out.shape();
  kernels::StridedIndex index;
  if (!contiguous) {
    SLUICE_ASSIGN_OR_RETURN(
        index,
        MakeStridedIndex(out.shape(), train::backend::BroadcastStrides(a.shape(), out.shape()),
                         train::backend::BroadcastStrides(b.shape(), out.shape())));
  }
  CUDA_RETURN_IF_ERROR(kernels::Binary(KindOf(op), F(a), F(b), F(out), out.num_elements(), index,
                                       contiguous, stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::SumInto(const Tensor& full, float scale, Tensor& grad) {
  if (grad.shape() == full.shape() && scale == 1.0f) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(grad.raw_data(), full.raw_data(), full.byte_size(),
                                         cudaMemcpyDeviceToDevice, stream()));
    return absl::OkStatus();
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor view, AsRankOf(grad, full.shape()));
  return Reduce(ReduceOp::kSum, full, RepeatedDims(grad.shape(), full.shape()), scale, view);
}

absl::Status CudaBackend::BinaryBackward(BinaryOp op, const Tensor& a, const Tensor& b,
                                         const Tensor& grad_out, Tensor* grad_a, Tensor* grad_b) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed,
                          Enter("BinaryBackward", {&a, &b, &grad_out}));
  const Shape& shape = grad_out.shape();
  if (op == BinaryOp::kEqual || op == BinaryOp::kGreater) {  // no gradient
    if (grad_a != nullptr) SLUICE_RETURN_IF_ERROR(Fill(*grad_a, 0.0f));
    if (grad_b != nullptr) SLUICE_RETURN_IF_ERROR(Fill(*grad_b, 0.0f));
    return absl::OkStatus();
  }
  if (op == BinaryOp::kMaximum || op == BinaryOp::kMinimum) {
    return SelectBackward(op == BinaryOp::kMaximum, a, b, grad_out, grad_a, grad_b);
  }
  // f(grad_out, other) in out's shape, then summed down to the operand.
  auto product_into = [&](BinaryOp f, const Tensor& other, float scale,
                          Tensor& grad) -> absl::Status {
    if (grad.shape() == shape && scale == 1.0f) return Binary(f, grad_out, other, grad);
    SLUICE_ASSIGN_OR_RETURN(Tensor t, Allocate(DType::kFloat32, shape));
    SLUICE_RETURN_IF_ERROR(Binary(f, grad_out, other, t));
    return SumInto(t, scale, grad);
  };
  if (grad_a != nullptr) {
    switch (op) {
      case BinaryOp::kAdd:
      case BinaryOp::kSub:
        SLUICE_RETURN_IF_ERROR(SumInto(grad_out, 1.0f, *grad_a));
        break;
      case BinaryOp::kMul:
        SLUICE_RETURN_IF_ERROR(product_into(BinaryOp::kMul, b, 1.0f, *grad_a));
        break;
      case BinaryOp::kDiv:
        SLUICE_RETURN_IF_ERROR(product_into(BinaryOp::kDiv, b, 1.0f, *grad_a));
        break;
      default:  // handled above
        break;
    }
  }
  if (grad_b != nullptr) {
    switch (op) {
      case BinaryOp::kAdd:
        SLUICE_RETURN_IF_ERROR(SumInto(grad_out, 1.0f, *grad_b));
        break;
      case BinaryOp::kSub:
        SLUICE_RETURN_IF_ERROR(SumInto(grad_out, -1.0f, *grad_b));
        break;
      case BinaryOp::kMul:
        SLUICE_RETURN_IF_ERROR(product_into(BinaryOp::kMul, a, 1.0f, *grad_b));
        break;
      case BinaryOp::kDiv: {
        // d/db (a / b) = -(a / b) / b, as on the CPU.
        SLUICE_ASSIGN_OR_RETURN(Tensor t, Allocate(DType::kFloat32, shape));
        SLUICE_RETURN_IF_ERROR(Binary(BinaryOp::kDiv, a, b, t));
        SLUICE_RETURN_IF_ERROR(Binary(BinaryOp::kDiv, t, b, t));
        SLUICE_RETURN_IF_ERROR(Binary(BinaryOp::kMul, t, grad_out, t));
        SLUICE_RETURN_IF_ERROR(SumInto(t, -1.0f, *grad_b));
        break;
      }
      default:  // handled above
        break;
    }
  }
  return absl::OkStatus();
}

absl::Status CudaBackend::SelectBackward(bool maximum, const Tensor& a, const Tensor& b,
                                         const Tensor& grad_out, Tensor* grad_a, Tensor* grad_b) {
  // g goes to the operand the forward picked, in out's shape, then summed down to the operand.
  const Shape& shape = grad_out.shape();
  if (grad_out.num_elements() == 0) {
    if (grad_a != nullptr) SLUICE_RETURN_IF_ERROR(Fill(*grad_a, 0.0f));
    if (grad_b != nullptr) SLUICE_RETURN_IF_ERROR(Fill(*grad_b, 0.0f));
    return absl::OkStatus();
  }
  const bool contiguous = a.shape() == shape && b.shape() == shape;
  kernels::StridedIndex index;
  if (!contiguous) {
    SLUICE_ASSIGN_OR_RETURN(
        index, MakeStridedIndex(shape, train::backend::BroadcastStrides(a.shape(), shape),
                                train::backend::BroadcastStrides(b.shape(), shape)));
  }
  auto full = [&](Tensor* grad) -> absl::StatusOr<std::optional<Tensor>> {
    if (grad == nullptr) return std::nullopt;
    if (grad->shape() == shape) return *grad;
    SLUICE_ASSIGN_OR_RETURN(Tensor t, Allocate(DType::kFloat32, shape));
    return t;
  };
  SLUICE_ASSIGN_OR_RETURN(std::optional<Tensor> full_a, full(grad_a));
  SLUICE_ASSIGN_OR_RETURN(std::optional<Tensor> full_b, full(grad_b));
  CUDA_RETURN_IF_ERROR(kernels::SelectBackward(
      maximum, F(a), F(b), F(grad_out), full_a ? F(*full_a) : nullptr,
      full_b ? F(*full_b) : nullptr, grad_out.num_elements(), index, contiguous, stream()));
  if (grad_a != nullptr && grad_a->shape() != shape) {
    SLUICE_RETURN_IF_ERROR(SumInto(*full_a, 1.0f, *grad_a));
  }
  if (grad_b != nullptr && grad_b->shape() != shape) {
    SLUICE_RETURN_IF_ERROR(SumInto(*full_b, 1.0f, *grad_b));
  }
  return absl::OkStatus();
}

absl::Status CudaBackend::Cast(const Tensor& x, Tensor& y) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("Cast", {&x, &y}));
  return CastUntimed(x, y);
}

absl::Status CudaBackend::CastUntimed(const Tensor& x, Tensor& y) {
  if (x.num_elements() != y.num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat("CudaBackend::Cast: ", x.shape().DebugString(),
                                                   " into ", y.shape().DebugString()));
  }
  SLUICE_ASSIGN_OR_RETURN(kernels::CastType from, CastTypeOf(x.dtype()));
  SLUICE_ASSIGN_OR_RETURN(kernels::CastType to, CastTypeOf(y.dtype()));
  const auto is16 = [](DType d) { return d == DType::kFloat16 || d == DType::kBFloat16; };
  if ((is16(x.dtype()) || is16(y.dtype())) &&
      (is16(x.dtype()) ? y.dtype() : x.dtype()) != DType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CudaBackend::Cast: float16 and bfloat16 convert to and from float32 only, got ",
        DTypeName(x.dtype()), " into ", DTypeName(y.dtype())));
  }
  CUDA_RETURN_IF_ERROR(
      kernels::Cast(x.raw_data(), from, y.raw_data(), to, x.num_elements(), stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::Unary(UnaryOp op, const Tensor& x, Tensor& y) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("Unary", {&x, &y}));
  CUDA_RETURN_IF_ERROR(kernels::Unary(KindOf(op), F(x), F(y), x.num_elements(), stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::UnaryBackward(UnaryOp op, const Tensor& x, const Tensor& y,
                                        const Tensor& grad_y, Tensor& grad_x) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed,
                          Enter("UnaryBackward", {&x, &y, &grad_y, &grad_x}));
  CUDA_RETURN_IF_ERROR(kernels::UnaryBackward(KindOf(op), F(x), F(y), F(grad_y), F(grad_x),
                                              x.num_elements(), stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::Dropout(const Tensor& x, float rate, uint64_t seed, Tensor& mask,
                                  Tensor& out) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("Dropout", {&x, &mask, &out}));
  CUDA_RETURN_IF_ERROR(
      kernels::Dropout(F(x), F(mask), F(out), x.num_elements(), rate, seed, stream()));
  return absl::OkStatus();
}

// --- reductions and data movement --------------------------------------------------------

absl::Status CudaBackend::Reduce(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced,
                                 float scale, Tensor& out) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("Reduce", {&x, &out}));
  if (out.num_elements() == 0) return absl::OkStatus();
  if (x.num_elements() == 0) return Fill(out, 0.0f);  // an empty sum (max is refused earlier)
  const kernels::ReduceKind kind =
      op == ReduceOp::kSum ? kernels::ReduceKind::kSum : kernels::ReduceKind::kMax;
  if (op == ReduceOp::kMax) scale = 1.0f;
  // x's dims without 1s, neighbours of one kind (reduced or kept) merged,
  // each with its element stride in x.
  std::vector<int64_t> dims, strides;
  std::vector<bool> kinds;
  const std::vector<int64_t> x_strides = ContiguousStrides(x.shape());
  for (int d = 0; d < x.rank(); ++d) {
    if (x.dim(d) == 1) continue;
    if (!dims.empty() && kinds.back() == reduced[d]) {
      dims.back() *= x.dim(d);
      strides.back() = x_strides[d];
      continue;
    }
    dims.push_back(x.dim(d));
    strides.push_back(x_strides[d]);
    kinds.push_back(reduced[d]);
  }
  const int rank = static_cast<int>(dims.size());
  const bool any_reduced = std::find(kinds.begin(), kinds.end(), true) != kinds.end();
  if (!any_reduced) {
    CUDA_RETURN_IF_ERROR(kernels::Scale(F(x), scale, F(out), out.num_elements(), stream()));
    return absl::OkStatus();
  }
  // [k1?, r, k2]: columns, read row by row.
  if (!kinds.back() && kinds[rank - 2] && (rank == 2 || rank == 3)) {
    const int64_t k2 = dims[rank - 1], r = dims[rank - 2], k1 = rank == 3 ? dims[0] : 1;
    const int splits = kernels::ColumnSplits(k1, r, k2);
    Tensor partial;
    if (splits > 1) {
      SLUICE_ASSIGN_OR_RETURN(partial, Allocate(DType::kFloat32, Shape{splits, k1, k2}));
    }
    CUDA_RETURN_IF_ERROR(kernels::ReduceColumns(
        kind, F(x), F(out), k1, r, k2, splits, splits > 1 ? F(partial) : nullptr, scale, stream()));
    return absl::OkStatus();
  }
  kernels::StridedIndex kept, red;
  int64_t n_out = 1, r_count = 1;
  for (int d = 0; d < rank; ++d) {
    kernels::StridedIndex& ix = kinds[d] ? red : kept;
    if (ix.rank == kernels::kMaxRank) {
      return absl::InvalidArgumentError(
          absl::StrCat("CudaBackend::Reduce: more than ", kernels::kMaxRank,
                       " alternating reduced and kept dims in ", x.shape().DebugString()));
    }
    ix.dims[ix.rank] = dims[d];
    ix.stride_a[ix.rank] = strides[d];
    ++ix.rank;
    (kinds[d] ? r_count : n_out) *= dims[d];
  }
  const int splits = kernels::GenericSplits(n_out, r_count);
  Tensor partial;
  if (splits > 1) {
    SLUICE_ASSIGN_OR_RETURN(partial, Allocate(DType::kFloat32, Shape{n_out, splits}));
  }
  CUDA_RETURN_IF_ERROR(kernels::ReduceGeneric(kind, F(x), F(out), n_out, kept, red, r_count, scale,
                                              splits, splits > 1 ? F(partial) : nullptr, stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::AccumulateSum(const Tensor& x, float scale, Tensor& total) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("AccumulateSum", {&x, &total}));
  if (x.dtype() != DType::kFloat32 || total.dtype() != DType::kFloat32 ||
      total.num_elements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaBackend::AccumulateSum: want float32 x and a float32 [1] total, got ",
                     DTypeName(x.dtype()), x.shape().DebugString(), " and ",
                     DTypeName(total.dtype()), total.shape().DebugString()));
  }
  return ScaledSum(x, scale, /*accumulate=*/true, total);
}

absl::Status CudaBackend::ScaledSum(const Tensor& x, float scale, bool accumulate, Tensor& out) {
  const int64_t n = x.num_elements();
  const int splits = kernels::GenericSplits(1, n);
  Tensor partial;
  if (splits > 1) {
    SLUICE_ASSIGN_OR_RETURN(partial, Allocate(DType::kFloat32, Shape{splits}));
  }
  CUDA_RETURN_IF_ERROR(kernels::ScaledSum(F(x), n, scale, accumulate, splits,
                                          splits > 1 ? F(partial) : nullptr, F(out), stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::BroadcastTo(const Tensor& in, float scale, Tensor& out) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("BroadcastTo", {&in, &out}));
  if (out.num_elements() == 0) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(
      kernels::StridedIndex index,
      MakeStridedIndex(out.shape(), train::backend::BroadcastStrides(in.shape(), out.shape()),
                       std::vector<int64_t>(out.rank(), 0)));
  CUDA_RETURN_IF_ERROR(
      kernels::Gather(F(in), 0, F(out), out.num_elements(), index, scale, stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::ReduceMaxBackward(const Tensor& x, const Tensor& max,
                                            const Tensor& grad_max, Tensor& grad_x) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed,
                          Enter("ReduceMaxBackward", {&x, &max, &grad_max, &grad_x}));
  if (x.num_elements() == 0) return absl::OkStatus();
  // mask = (x == max), ties = mask summed per maximum, then the gradient of
  // each maximum split evenly between its ties.
  const std::vector<int64_t> max_strides = train::backend::BroadcastStrides(max.shape(), x.shape());
  SLUICE_ASSIGN_OR_RETURN(kernels::StridedIndex index,
                          MakeStridedIndex(x.shape(), ContiguousStrides(x.shape()), max_strides));
  SLUICE_ASSIGN_OR_RETURN(Tensor mask, Allocate(DType::kFloat32, x.shape()));
  CUDA_RETURN_IF_ERROR(kernels::Binary(kernels::BinaryKind::kEqualMask, F(x), F(max), F(mask),
                                       x.num_elements(), index, /*contiguous=*/false, stream()));
  SLUICE_ASSIGN_OR_RETURN(Tensor ties, Allocate(DType::kFloat32, max.shape()));
  SLUICE_ASSIGN_OR_RETURN(Tensor ties_view, AsRankOf(ties, x.shape()));
  SLUICE_RETURN_IF_ERROR(
      Reduce(ReduceOp::kSum, mask, RepeatedDims(max.shape(), x.shape()), 1.0f, ties_view));
  SLUICE_ASSIGN_OR_RETURN(
      kernels::StridedIndex max_index,
      MakeStridedIndex(x.shape(), max_strides, std::vector<int64_t>(x.rank(), 0)));
  CUDA_RETURN_IF_ERROR(kernels::MaxBackward(F(mask), F(grad_max), F(ties), F(grad_x),
                                            x.num_elements(), max_index, stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::Transpose(const Tensor& x, const std::vector<int>& perm, Tensor& out) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("Transpose", {&x, &out}));
  if (out.num_elements() == 0) return absl::OkStatus();
  const std::vector<int64_t> in_strides = ContiguousStrides(x.shape());
  std::vector<int64_t> read(x.rank());
  for (int i = 0; i < x.rank(); ++i) read[i] = in_strides[perm[i]];
  SLUICE_ASSIGN_OR_RETURN(kernels::StridedIndex index,
                          MakeStridedIndex(out.shape(), read, std::vector<int64_t>(x.rank(), 0)));
  CUDA_RETURN_IF_ERROR(kernels::Gather(F(x), 0, F(out), out.num_elements(), index, 1.0f, stream()));
  return absl::OkStatus();
}

namespace {
// cudaMemcpy2DAsync's largest pitch: cudaDevAttrMaxPitch is 2^31 - 1 bytes on every device since
// compute capability 2.0.
constexpr size_t kMaxPitch = (size_t{1} << 31) - 1;

// Viewed as [outer, dim(axis) * inner], each part is one block of columns of
// every row: one strided 2-D copy a part.
absl::Status CopyBlocks(const Shape& whole_shape, int axis, const std::vector<const Tensor*>& parts,
                        bool into_parts, float* whole, cudaStream_t stream) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= whole_shape.dim(d);
  for (int d = axis + 1; d < whole_shape.rank(); ++d) inner *= whole_shape.dim(d);
  const size_t row_bytes = static_cast<size_t>(whole_shape.dim(axis) * inner) * sizeof(float);
  size_t offset = 0;
  for (const Tensor* p : parts) {
    const size_t w = static_cast<size_t>(p->dim(axis) * inner) * sizeof(float);
    if (w > 0 && outer > 0) {
      char* span = reinterpret_cast<char*>(whole) + offset;
      char* part = static_cast<char*>(const_cast<void*>(p->raw_data()));
      if (outer == 1 || row_bytes > kMaxPitch) {
        // A 2-D copy refuses a pitch past the device's limit (cudaDevAttrMaxPitch): rows this
        // long are few, one copy each.
        for (int64_t r = 0; r < outer; ++r) {
          char* row = span + static_cast<size_t>(r) * row_bytes;
          char* piece = part + static_cast<size_t>(r) * w;
          CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(into_parts ? piece : row, into_parts ? row : piece,
                                               w, cudaMemcpyDeviceToDevice, stream));
        }
      } else if (into_parts) {
        CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(part, w, span, row_bytes, w, outer,
                                               cudaMemcpyDeviceToDevice, stream));
      } else {
        CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(span, row_bytes, part, w, w, outer,
                                               cudaMemcpyDeviceToDevice, stream));
      }
    }
    offset += w;
  }
  return absl::OkStatus();
}
}  // namespace

absl::Status CudaBackend::Concat(const std::vector<Tensor>& inputs, int axis, Tensor& out) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("Concat", {&out}));
  std::vector<const Tensor*> parts;
  for (const Tensor& t : inputs) {
    SLUICE_RETURN_IF_ERROR(CheckTensors("Concat", {&t}));
    parts.push_back(&t);
  }
  return CopyBlocks(out.shape(), axis, parts, /*into_parts=*/false, F(out), stream());
}

absl::Status CudaBackend::Split(const Tensor& x, int axis, std::vector<Tensor>& outputs) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("Split", {&x}));
  std::vector<const Tensor*> parts;
  for (const Tensor& t : outputs) {
    SLUICE_RETURN_IF_ERROR(CheckTensors("Split", {&t}));
    parts.push_back(&t);
  }
  return CopyBlocks(x.shape(), axis, parts, /*into_parts=*/true, F(x), stream());
}

// --- softmax and loss --------------------------------------------------------------------

absl::Status CudaBackend::Softmax(const Tensor& logits, Tensor& y) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("Softmax", {&logits, &y}));
  const int64_t c = logits.dim(logits.rank() - 1);
  CUDA_RETURN_IF_ERROR(kernels::Softmax(F(logits), F(y), Rows(logits), c, stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::SoftmaxBackward(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed,
                          Enter("SoftmaxBackward", {&y, &grad_y, &grad_x}));
  const int64_t c = y.dim(y.rank() - 1);
  CUDA_RETURN_IF_ERROR(kernels::SoftmaxBackward(F(y), F(grad_y), F(grad_x), Rows(y), c, stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::SparseSoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels,
                                                    Tensor& loss, Tensor& probs, float scale,
                                                    Tensor* reduced) {
  SLUICE_ASSIGN_OR_RETURN(
      const KernelTimer::Scope timed,
      Enter("SparseSoftmaxCrossEntropy", {&logits, &labels, &loss, &probs, reduced}));
  if (labels.dtype() != DType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaBackend::SparseSoftmaxCrossEntropy: labels must be int64, got ",
                     DTypeName(labels.dtype())));
  }
  CUDA_RETURN_IF_ERROR(kernels::SparseSoftmaxCrossEntropy(F(logits), labels.data<int64_t>(),
                                                          F(loss), F(probs), logits.dim(0),
                                                          logits.dim(1), stream()));
  if (reduced != nullptr) {
    // A second launch: the rows' blocks cannot sum their losses in one without a grid-wide
    // barrier.
    SLUICE_RETURN_IF_ERROR(ScaledSum(loss, scale, /*accumulate=*/false, *reduced));
  }
  return absl::OkStatus();
}

absl::Status CudaBackend::SparseSoftmaxCrossEntropyBackward(const Tensor& probs,
                                                            const Tensor& labels,
                                                            const Tensor& grad_loss, float scale,
                                                            Tensor& grad_logits) {
  SLUICE_ASSIGN_OR_RETURN(
      const KernelTimer::Scope timed,
      Enter("SparseSoftmaxCrossEntropyBackward", {&probs, &labels, &grad_loss, &grad_logits}));
  if (labels.dtype() != DType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaBackend::SparseSoftmaxCrossEntropyBackward: labels must be int64, got ",
                     DTypeName(labels.dtype())));
  }
  CUDA_RETURN_IF_ERROR(kernels::SparseSoftmaxCrossEntropyBackward(
      F(probs), labels.data<int64_t>(), F(grad_loss), grad_loss.num_elements() == 1, scale,
      F(grad_logits), probs.dim(0), probs.dim(1), stream()));
  return absl::OkStatus();
}

// --- labels and metrics ------------------------------------------------------------------

absl::Status CudaBackend::CastLabels(const Tensor& labels, int64_t num_classes, Tensor& labels64,
                                     Tensor& invalid) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed,
                          Enter("CastLabels", {&labels, &labels64, &invalid}));
  const bool int32 = labels.dtype() == DType::kInt32;
  if ((!int32 && labels.dtype() != DType::kInt64) || labels64.dtype() != DType::kInt64 ||
      labels.num_elements() != labels64.num_elements() || invalid.dtype() != DType::kFloat32 ||
      invalid.num_elements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CudaBackend::CastLabels: want int32/int64 labels, int64 labels64 of the same size and "
        "float32 [1] invalid, got ",
        DTypeName(labels.dtype()), labels.shape().DebugString()));
  }
  CUDA_RETURN_IF_ERROR(kernels::CastLabels(labels.raw_data(), int32, labels.num_elements(),
                                           num_classes, labels64.data<int64_t>(), F(invalid),
                                           stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::ArgMax(const Tensor& x, Tensor& out) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter("ArgMax", {&x, &out}));
  const int64_t c = x.rank() == 0 ? 1 : x.dim(x.rank() - 1);
  const int64_t rows = out.num_elements();
  if (x.dtype() != DType::kFloat32 || out.dtype() != DType::kInt64 || c < 1 ||
      rows * c != x.num_elements()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaBackend::ArgMax: want float32 x [rows, c >= 1] and int64 [rows], got ",
                     DTypeName(x.dtype()), x.shape().DebugString(), " and ", DTypeName(out.dtype()),
                     out.shape().DebugString()));
  }
  CUDA_RETURN_IF_ERROR(kernels::ArgMax(F(x), rows, c, out.data<int64_t>(), stream()));
  return absl::OkStatus();
}

absl::Status CudaBackend::InTopK(const Tensor& predictions, const Tensor& labels, int k,
                                 bool first_max_only, Tensor& out) {
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed,
                          Enter("InTopK", {&predictions, &labels, &out}));
  const bool int32 = labels.dtype() == DType::kInt32;
  if ((!int32 && labels.dtype() != DType::kInt64) || labels.num_elements() != predictions.dim(0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaBackend::InTopK: want int32 or int64 labels [", predictions.dim(0),
                     "], got ", DTypeName(labels.dtype()), labels.shape().DebugString()));
  }
  CUDA_RETURN_IF_ERROR(kernels::InTopK(F(predictions), labels.raw_data(), int32, predictions.dim(0),
                                       predictions.dim(1), k, first_max_only, F(out), stream()));
  return absl::OkStatus();
}

// --- optimizer updates ---------------------------------------------------------------------

// kernels.h repeats backend.h's StepScalar for the .cu files, which include no Abseil.
static_assert(kernels::kStepRate == kStepRate && kernels::kStepDecay == kStepDecay &&
              kernels::kStepGradientCoefficient == kStepGradientCoefficient &&
              kernels::kStepVScale == kStepVScale && kStepScalars == 4);

// optimizer_update.h's kinds and slot order, repeated by kernels.h.
static_assert(
    static_cast<int>(kernels::UpdateKind::kSgd) == static_cast<int>(UpdateKind::kSgd) &&
    static_cast<int>(kernels::UpdateKind::kAdam) == static_cast<int>(UpdateKind::kAdam) &&
    static_cast<int>(kernels::UpdateKind::kRmsprop) == static_cast<int>(UpdateKind::kRmsprop) &&
    static_cast<int>(kernels::UpdateKind::kAdagrad) == static_cast<int>(UpdateKind::kAdagrad) &&
    static_cast<int>(kernels::UpdateKind::kAdadelta) == static_cast<int>(UpdateKind::kAdadelta) &&
    static_cast<int>(kernels::UpdateKind::kAdamax) == static_cast<int>(UpdateKind::kAdamax) &&
    static_cast<int>(kernels::UpdateKind::kNadam) == static_cast<int>(UpdateKind::kNadam) &&
    kMaxUpdateSlots == 3);

absl::Status CudaBackend::OptimizerUpdate(const UpdateRule& rule,
                                          absl::Span<const UpdateOperands> vars,
                                          const Tensor& step) {
  const char* name = UpdateName(rule.kind);
  SLUICE_ASSIGN_OR_RETURN(const KernelTimer::Scope timed, Enter(name, {&step}));
  SLUICE_RETURN_IF_ERROR(CheckUpdate(rule, vars, step));  // every operand on step's device
  std::vector<kernels::UpdateTensor> tensors(vars.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    tensors[i].w = F(*vars[i].w);
    tensors[i].g = F(*vars[i].g);
    for (int j = 0; j < kMaxUpdateSlots; ++j) {
      tensors[i].slots[j] = vars[i].slots[j] != nullptr ? F(*vars[i].slots[j]) : nullptr;
    }
    tensors[i].n = vars[i].w->num_elements();
  }
  const kernels::UpdateConstants constants{.kind = static_cast<kernels::UpdateKind>(rule.kind),
                                           .momentum = rule.momentum,
                                           .nesterov = rule.nesterov,
                                           .beta_1 = rule.beta_1,
                                           .beta_2 = rule.beta_2,
                                           .rho = rule.rho,
                                           .epsilon = rule.epsilon};
  CUDA_RETURN_IF_ERROR(kernels::OptimizerUpdate(
      constants, tensors.data(), static_cast<int>(tensors.size()), F(step), stream()));
  return absl::OkStatus();
}

}  // namespace sluice::train::backend::cuda
