#include "distributed/nccl/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "train/backend/cuda/cuda_backend.h"
#include "train/backend/cuda/cuda_check.h"
#include "train/backend/cuda/stream.h"

namespace sluice::distributed {

namespace cuda = train::backend::cuda;

namespace {

absl::Status NcclStatus(ncclResult_t rc, absl::string_view call) {
  if (rc == ncclSuccess || rc == ncclInProgress) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, ": ", ncclGetErrorString(rc)));
}

// The library's type for a dtype CheckAllReduceTensors accepted (float32, int32 or int64).
ncclDataType_t ReduceType(DType dtype) {
  switch (dtype) {
    case DType::kInt32:
      return ncclInt32;
    case DType::kInt64:
      return ncclInt64;
    default:
      return ncclFloat32;
  }
}

ncclRedOp_t ToNccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kMean:
      return ncclAvg;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
  }
  return ncclSum;
}

int64_t Bytes(const Tensor& t) {
  return t.num_elements() * static_cast<int64_t>(DTypeSize(t.dtype()));
}

}  // namespace

struct NcclCommunicator::Nccl {
  ncclComm_t comm = nullptr;
  cuda::Stream stream;         // the collectives
  cuda::CudaBackend* backend;  // whose stream the tensors' work is queued on
  explicit Nccl(cuda::Stream s, cuda::CudaBackend* b) : stream(std::move(s)), backend(b) {}
};

NcclCommunicator::NcclCommunicator(Communicator& bootstrap, NcclCommunicatorOptions options,
                                   int device)
    : bootstrap_(&bootstrap), options_(options), device_(device) {}

absl::StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(
    Communicator& bootstrap, NcclCommunicatorOptions options) {
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("NCCL: the collective timeout must be positive");
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("NCCL: ", bootstrap.Describe(), " sees no CUDA device"));
  }
  const int device = options.device >= 0 ? options.device : bootstrap.rank() % devices;
  if (device >= devices) {
    return absl::InvalidArgumentError(
        absl::StrCat("NCCL: device ", device, " requested, ", devices, " visible"));
  }
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  SLUICE_ASSIGN_OR_RETURN(cuda::CudaBackend * backend, cuda::CudaBackend::ForDevice(device));
  SLUICE_ASSIGN_OR_RETURN(cuda::Stream stream, cuda::Stream::Create(device));

  // Rank 0's unique id, to every rank.
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  std::string mine;
  if (bootstrap.rank() == 0) {
    SLUICE_RETURN_IF_ERROR(NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
    mine.assign(id.internal, sizeof(id.internal));
  }
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> ids, bootstrap.AllGatherBytes(mine));
  if (ids.empty() || ids[0].size() != sizeof(id.internal)) {
    return absl::InternalError("NCCL: rank 0 sent no unique id");
  }
  std::memcpy(id.internal, ids[0].data(), sizeof(id.internal));

  std::unique_ptr<NcclCommunicator> comm(new NcclCommunicator(bootstrap, options, device));
  comm->nccl_ = std::make_unique<Nccl>(std::move(stream), backend);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every wait is ours, against the timeout
  SLUICE_RETURN_IF_ERROR(NcclStatus(
      ncclCommInitRankConfig(&comm->nccl_->comm, comm->size(), id, comm->rank(), &config),
      "ncclCommInitRankConfig"));
  SLUICE_RETURN_IF_ERROR(comm->WaitUntilDone("NCCL set-up (ncclCommInitRankConfig)", *comm->nccl_,
                                             nullptr, absl::Now() + options.timeout));
  return comm;
}

NcclCommunicator::~NcclCommunicator() {
  if (nccl_ == nullptr || nccl_->comm == nullptr) return;
  // Collectives still queued finish first; a broken group was aborted already.
  (void)nccl_->stream.Synchronize();
  ncclCommDestroy(nccl_->comm);
}

std::string NcclCommunicator::Describe() const {
  return absl::StrCat("NCCL rank ", rank(), " of ", size(), " on cuda:", device_, " (",
                      bootstrap_->Describe(), ")");
}

double NcclCommunicator::busy_seconds() const {
  MutexLock lock(&mu_);
  return busy_seconds_;
}

absl::Status NcclCommunicator::Broken(absl::string_view what) const {
  MutexLock lock(&mu_);
  if (broken_.ok()) return absl::OkStatus();
  return WithContext(broken_, absl::StrCat(what, ": the group is broken by an earlier error: "));
}

absl::Status NcclCommunicator::Break(absl::Status status) {
  {
    MutexLock lock(&mu_);
    if (!broken_.ok()) return status;
    broken_ = status;
  }
  // Frees the group's resources and unblocks its kernels; the communicator is unusable after.
  if (nccl_ != nullptr && nccl_->comm != nullptr) {
    ncclCommAbort(nccl_->comm);
    nccl_->comm = nullptr;
  }
  return status;
}

absl::Status NcclCommunicator::WaitUntilDone(const std::string& what, Nccl& nccl, void* done,
                                             absl::Time deadline) {
  int idle = 0;
  while (true) {
    SLUICE_RETURN_IF_ERROR(Broken(what));  // aborted meanwhile: its event says nothing
    ncclResult_t state = ncclSuccess;
    if (nccl.comm != nullptr) {
      const ncclResult_t rc = ncclCommGetAsyncError(nccl.comm, &state);
      if (rc != ncclSuccess) state = rc;
    }
    if (state != ncclSuccess && state != ncclInProgress) {
      return Break(absl::InternalError(
          absl::StrCat(what, " on ", Describe(), ": ", ncclGetErrorString(state))));
    }
    bool finished = state == ncclSuccess;
    if (finished && done != nullptr) {
      const cudaError_t q = cudaEventQuery(static_cast<cudaEvent_t>(done));
      if (q != cudaSuccess && q != cudaErrorNotReady) {
        return Break(cuda::CudaStatus(q, "cudaEventQuery", __FILE__, __LINE__));
      }
      finished = q == cudaSuccess;
    }
    if (finished) return absl::OkStatus();
    if (absl::Now() > deadline) {
      const std::string late = absl::StrCat(what, " on ", Describe(), " did not finish within ",
                                            absl::FormatDuration(options_.timeout));
      (void)Break(absl::DeadlineExceededError(late));
      // Which ranks are gone: the bootstrap's barrier names those that never join it.
      const absl::Status alive = bootstrap_->Barrier();
      const std::string why =
          alive.ok() ? "every rank answers the bootstrap, so a rank is at another collective or "
                       "its GPU hangs"
                     : std::string(alive.message());
      MutexLock lock(&mu_);
      broken_ = absl::DeadlineExceededError(absl::StrCat(late, "; ", why));
      return broken_;
    }
    // Collectives take microseconds to milliseconds: spin briefly, then leave the core.
    if (++idle > 64) usleep(50);
  }
}

absl::Status NcclCommunicator::CheckTensors(const std::vector<Tensor>& tensors,
                                            absl::string_view what) const {
  for (const Tensor& t : tensors) {
    if (!(t.device() == Device::Cuda(device_))) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": NCCL takes tensors on cuda:", device_, ", got one on ", t.device().DebugString(),
          " (host tensors go through the MPI communicator)"));
    }
    if (t.dtype() == DType::kBytes) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": collectives take no bytes tensors"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<PendingCollective> NcclCommunicator::Start(
    const std::string& description, absl::FunctionRef<absl::Status(Nccl&)> enqueue,
    std::shared_ptr<const void> keep) {
  SLUICE_RETURN_IF_ERROR(Broken(description));
  int64_t seq;
  {
    MutexLock lock(&mu_);
    seq = ++collectives_;
  }
  const std::string what = absl::StrCat(description, " (collective #", seq, ")");
  const absl::Time start = absl::Now();
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  // After the work the backend queued for the tensors...
  SLUICE_ASSIGN_OR_RETURN(cuda::Event ready, cuda::Event::Create(device_));
  CUDA_RETURN_IF_ERROR(cudaEventRecord(ready.get(), nccl_->backend->stream()));
  CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(nccl_->stream.get(), ready.get(), 0));
  const absl::Time deadline = start + options_.timeout;
  SLUICE_RETURN_IF_ERROR(NcclStatus(ncclGroupStart(), "ncclGroupStart"));
  const absl::Status queued = enqueue(*nccl_);
  const ncclResult_t end = ncclGroupEnd();
  if (!queued.ok()) return Break(queued);
  if (end == ncclInProgress) {
    // Non-blocking: the calls are on the stream only once NCCL's state leaves "in progress".
    SLUICE_RETURN_IF_ERROR(WaitUntilDone(what, *nccl_, nullptr, deadline));
  } else if (end != ncclSuccess) {
    return Break(NcclStatus(end, "ncclGroupEnd"));
  }
  // ... and before the work queued after it.
  SLUICE_ASSIGN_OR_RETURN(cuda::Event done_event, cuda::Event::Create(device_));
  auto done = std::make_shared<cuda::Event>(std::move(done_event));
  CUDA_RETURN_IF_ERROR(cudaEventRecord(done->get(), nccl_->stream.get()));
  CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(nccl_->backend->stream(), done->get(), 0));
  return PendingCollective([this, what, done, start, deadline, keep]() -> absl::Status {
    const absl::Status s = WaitUntilDone(what, *nccl_, done->get(), deadline);
    MutexLock lock(&mu_);
    busy_seconds_ += absl::ToDoubleSeconds(absl::Now() - start);
    return s;
  });
}

absl::StatusOr<PendingCollective> NcclCommunicator::StartAllReduce(std::vector<Tensor> tensors,
                                                                   ReduceOp op) {
  if (tensors.empty()) return PendingCollective();
  SLUICE_ASSIGN_OR_RETURN(const AllReduceShape shape, CheckAllReduceTensors(tensors, op));
  const ncclDataType_t type = ReduceType(shape.dtype);
  const std::string what =
      absl::StrCat("AllReduce(", ReduceOpName(op), ") of ", tensors.size(), " ",
                   DTypeName(shape.dtype), " tensors, ", shape.bytes, " bytes");
  SLUICE_RETURN_IF_ERROR(CheckTensors(tensors, what));
  // The tensors stay referenced until the collective is waited for.
  auto held = std::make_shared<std::vector<Tensor>>(std::move(tensors));
  return Start(
      what,
      [&](Nccl& nccl) {
        for (Tensor& t : *held) {
          SLUICE_RETURN_IF_ERROR(NcclStatus(
              ncclAllReduce(t.raw_data(), t.raw_data(), static_cast<size_t>(t.num_elements()), type,
                            ToNccl(op), nccl.comm, nccl.stream.get()),
              "ncclAllReduce"));
        }
        return absl::OkStatus();
      },
      held);
}

absl::Status NcclCommunicator::Broadcast(std::vector<Tensor> tensors, int root) {
  if (root < 0 || root >= size()) {
    return absl::InvalidArgumentError(absl::StrCat("broadcast from rank ", root, " of ", size()));
  }
  const std::string what =
      absl::StrCat("Broadcast of ", tensors.size(), " tensors from rank ", root);
  SLUICE_RETURN_IF_ERROR(CheckTensors(tensors, what));
  SLUICE_ASSIGN_OR_RETURN(
      PendingCollective pending, Start(what, [&](Nccl& nccl) {
        for (Tensor& t : tensors) {
          // As bytes: any dtype goes.
          SLUICE_RETURN_IF_ERROR(
              NcclStatus(ncclBroadcast(t.raw_data(), t.raw_data(), static_cast<size_t>(Bytes(t)),
                                       ncclUint8, root, nccl.comm, nccl.stream.get()),
                         "ncclBroadcast"));
        }
        return absl::OkStatus();
      }));
  return pending.Wait();
}

absl::StatusOr<Tensor> NcclCommunicator::AllGather(const Tensor& t) {
  const std::string what =
      absl::StrCat("AllGather of a ", DTypeName(t.dtype()), " tensor ", t.shape().DebugString());
  SLUICE_RETURN_IF_ERROR(CheckTensors({t}, what));
  std::vector<int64_t> dims = {size()};
  for (int64_t d : t.shape().dims()) dims.push_back(d);
  SLUICE_ASSIGN_OR_RETURN(Tensor out, nccl_->backend->Allocate(t.dtype(), Shape(dims)));
  SLUICE_ASSIGN_OR_RETURN(
      PendingCollective pending, Start(what, [&](Nccl& nccl) {
        return NcclStatus(ncclAllGather(t.raw_data(), out.raw_data(), static_cast<size_t>(Bytes(t)),
                                        ncclUint8, nccl.comm, nccl.stream.get()),
                          "ncclAllGather");
      }));
  SLUICE_RETURN_IF_ERROR(pending.Wait());
  return out;
}

absl::StatusOr<std::vector<std::string>> NcclCommunicator::AllGatherBytes(
    const std::string& bytes) {
  return bootstrap_->AllGatherBytes(bytes);
}

absl::Status NcclCommunicator::Barrier() { return bootstrap_->Barrier(); }

absl::Status NcclCommunicator::AllReduceHost(void* data, int64_t count, ValueType type,
                                             ReduceOp op) {
  if (type == ValueType::kInt64) {
    return bootstrap_->AllReduceValues(absl::MakeSpan(static_cast<int64_t*>(data), count), op);
  }
  return bootstrap_->AllReduceValues(absl::MakeSpan(static_cast<double*>(data), count), op);
}

void NcclCommunicator::Abort(int exit_code) {
  bootstrap_->Abort(exit_code);
  std::abort();  // not reached: the bootstrap's Abort does not return
}

}  // namespace sluice::distributed
