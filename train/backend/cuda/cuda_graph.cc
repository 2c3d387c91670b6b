// CudaBackend::Capture: a traced step's replay as CUDA graphs (train/function/program.h).
//
// The capture runs on a stream of its own that only the capturing thread's calls of this backend
// queue on (CudaBackend::stream() is per thread), so other threads' work (a PrefetchToDevice copy,
// another model) goes on as usual and is not captured. The blocks the captured calls allocate
// come from the allocator's cache for that stream, which the allocator keeps for the graph until
// it is destroyed (DeviceAllocator::Reserve): nothing else can be given memory that a launch
// writes. The graph launches on the backend's stream, after the work queued there.
#include <cuda_runtime.h>

#include <memory>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "train/backend/cuda/cuda_backend.h"
#include "train/backend/cuda/cuda_check.h"
#include "train/backend/cuda/device_scope.h"
#include "train/backend/cuda/stream.h"

namespace sluice::train::backend::cuda {

class CudaGraph final : public train::backend::DeviceGraph {
 public:
  CudaGraph(CudaBackend& backend, Stream capture_stream)
      : backend_(backend), capture_stream_(std::move(capture_stream)) {}
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  ~CudaGraph() override {
    const DeviceScope scope(backend_.device_);  // the destroying thread keeps its own device
    // A launch in flight still writes the pool: let it end before the blocks go back.
    if (scope.status() == cudaSuccess) cudaStreamSynchronize(backend_.stream_.get());
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    if (graph_ != nullptr) cudaGraphDestroy(graph_);
    backend_.allocator_.Unreserve(capture_stream_.get(), backend_.stream_.get());
  }

  // Ends the capture begun on capture_stream_ and instantiates what it recorded.
  absl::Status Finish() {
    const cudaError_t end = cudaStreamEndCapture(capture_stream_.get(), &graph_);
    if (end != cudaSuccess) {
      cudaGetLastError();  // not sticky: the backend goes on without this graph
      return CudaStatus(end, "cudaStreamEndCapture", __FILE__, __LINE__);
    }
    CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(graph_, nullptr, &nodes_));
    CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&exec_, graph_, 0));
    return absl::OkStatus();
  }

  absl::Status Launch() override {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(backend_.device_));
    const KernelTimer::Scope timed = backend_.Timed("CudaGraph");
    CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec_, backend_.stream_.get()));
    return absl::OkStatus();
  }

  size_t nodes() const override { return nodes_; }

 private:
  CudaBackend& backend_;
  Stream capture_stream_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  size_t nodes_ = 0;
};

absl::StatusOr<std::unique_ptr<train::backend::DeviceGraph>> CudaBackend::Capture(
    const std::function<absl::Status()>& work) {
  if (capture_.backend != nullptr) {
    return absl::FailedPreconditionError(
        "CudaBackend::Capture: this thread is already capturing a graph");
  }
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  SLUICE_ASSIGN_OR_RETURN(Stream capture_stream, Stream::Create(device_));
  const cudaStream_t s = capture_stream.get();
  allocator_.Reserve(s);
  // From here the graph object owns the reservation: its destructor ends it.
  auto graph = std::make_unique<CudaGraph>(*this, std::move(capture_stream));
  // Thread-local mode: this thread may not make calls that would break the capture (a host
  // wait, a synchronous copy), and fails on them; other threads are not restricted.
  // Other threads' EmptyCache (a device-wide wait) waits for the capture to end.
  allocator_.CaptureBegins();
  absl::Cleanup capture_ends = [this] { allocator_.CaptureEnds(); };
  CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  capture_ = CaptureTarget{.backend = this, .stream = s};
  const absl::Status worked = work();
  capture_ = CaptureTarget{};
  absl::Status rebound;
  {
    // The handles are bound to the capture stream, which dies with the graph: back to ours.
    MutexLock lock(&library_mu_);
    rebound = BindLibrariesLocked();
  }
  const absl::Status finished = graph->Finish();
  std::move(capture_ends).Invoke();
  // A failed call's error stays the thread's last error; cleared, so that the next kernel
  // launch's check (cudaGetLastError) does not report it.
  if (!worked.ok()) {
    cudaGetLastError();
    return worked;
  }
  if (!finished.ok()) {
    cudaGetLastError();
    return finished;
  }
  SLUICE_RETURN_IF_ERROR(rebound);
  return std::unique_ptr<train::backend::DeviceGraph>(std::move(graph));
}

}  // namespace sluice::train::backend::cuda
