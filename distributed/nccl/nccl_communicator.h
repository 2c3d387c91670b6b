#ifndef SLUICE_DISTRIBUTED_NCCL_NCCL_COMMUNICATOR_H_
#define SLUICE_DISTRIBUTED_NCCL_NCCL_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/mutex.h"
#include "distributed/communicator.h"
#include "distributed/device_communicator.h"

namespace sluice::distributed {

// The timeout covers NCCL's set-up and each collective; when it passes, NCCL is aborted
// (ncclCommAbort). The device is this rank's CUDA device.
using NcclCommunicatorOptions = DeviceCommunicatorOptions;

// Collectives on CUDA tensors through NCCL, as PyTorch's "nccl" process group. Tensors are
// reduced in device memory on a stream of the communicator's own, ordered after the work the CUDA
// backend has queued for them and before the work it queues after the collective (events, no
// host synchronisation in between).
//
// The group is bootstrapped through `bootstrap`, the process group of the same ranks (the MPI
// communicator, which the caller keeps): rank 0's ncclUniqueId reaches every rank through its
// AllGatherBytes. The bootstrap also carries the host collectives (AllGatherBytes, Barrier,
// AllReduceValues) and Abort.
//
// NCCL runs non-blocking (ncclConfig_t::blocking = 0): each wait polls ncclCommGetAsyncError and
// the collective's event against the timeout. On a timeout NCCL is aborted, the bootstrap's
// Barrier tells which ranks are gone (the MPI communicator names the ranks that never join it),
// and the error names the collective, its number and those ranks. After any error the group is
// broken: later collectives fail at once.
//
// Written against NCCL 2.28 and built into libsluice_cuda.so wherever CUDA and NCCL are, whose
// sluice_plugin_create_communicator makes it for distributed::CreateDeviceCommunicator; not yet
// run on a GPU here (tests/distributed/nccl/ skip without enough devices).
class NcclCommunicator final : public Communicator {
 public:
  // `bootstrap` must outlive the communicator.
  static absl::StatusOr<std::unique_ptr<NcclCommunicator>> Create(
      Communicator& bootstrap, NcclCommunicatorOptions options = {});
  ~NcclCommunicator() override;

  int rank() const override { return bootstrap_->rank(); }
  int size() const override { return bootstrap_->size(); }
  std::string Describe() const override;
  Device device() const override { return Device::Cuda(device_); }

  // Tensors on this rank's CUDA device only (InvalidArgument otherwise: host tensors go through
  // the bootstrap). All-reduce takes float32, int32 or int64; kMean float32 only (ncclAvg).
  absl::StatusOr<PendingCollective> StartAllReduce(std::vector<Tensor> tensors,
                                                   ReduceOp op) override;
  absl::Status Broadcast(std::vector<Tensor> tensors, int root) override;
  absl::StatusOr<Tensor> AllGather(const Tensor& t) override;
  absl::StatusOr<std::vector<std::string>> AllGatherBytes(const std::string& bytes) override;
  absl::Status Barrier() override;
  double busy_seconds() const override;
  [[noreturn]] void Abort(int exit_code) override;

 protected:
  absl::Status AllReduceHost(void* data, int64_t count, ValueType type, ReduceOp op) override;

 private:
  struct Nccl;  // NCCL and CUDA handles, kept out of this header
  NcclCommunicator(Communicator& bootstrap, NcclCommunicatorOptions options, int device);

  // Checks the tensors: on this rank's device, not bytes.
  absl::Status CheckTensors(const std::vector<Tensor>& tensors, absl::string_view what) const;
  // Queues `enqueue` (the NCCL calls of one collective, grouped) on the communicator's stream
  // after the backend's queued work; the result waits for them (against the timeout) and holds
  // `keep` (the tensors) until then.
  absl::StatusOr<PendingCollective> Start(const std::string& what,
                                          absl::FunctionRef<absl::Status(Nccl&)> enqueue,
                                          std::shared_ptr<const void> keep = nullptr);
  // Polls NCCL's state, and the event `done` when given, until both are complete or the deadline
  // passes (then the group breaks).
  absl::Status WaitUntilDone(const std::string& what, Nccl& nccl, void* done, absl::Time deadline);
  // Marks the group broken with `status`, aborting NCCL; returns the status.
  absl::Status Break(absl::Status status);
  absl::Status Broken(absl::string_view what) const;

  Communicator* bootstrap_;
  NcclCommunicatorOptions options_;
  int device_ = 0;
  std::unique_ptr<Nccl> nccl_;

  mutable Mutex mu_;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  int64_t collectives_ ABSL_GUARDED_BY(mu_) = 0;
  double busy_seconds_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sluice::distributed

#endif  // SLUICE_DISTRIBUTED_NCCL_NCCL_COMMUNICATOR_H_
