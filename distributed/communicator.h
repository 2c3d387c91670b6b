#ifndef SLUICE_DISTRIBUTED_COMMUNICATOR_H_
#define SLUICE_DISTRIBUTED_COMMUNICATOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/device.h"
#include "core/tensor.h"

namespace sluice::distributed {

enum class ReduceOp { kSum, kMean, kMin, kMax };
absl::string_view ReduceOpName(ReduceOp op);

// A collective that was started and may still run (Communicator::StartAllReduce).
class PendingCollective {
 public:
  // Already finished, OK.
  PendingCollective() = default;
  explicit PendingCollective(std::function<absl::Status()> wait) : wait_(std::move(wait)) {}
  // Waits until the collective is done: then its tensors hold the result. Once; later calls
  // return OK at once.
  absl::Status Wait() {
    if (!wait_) return absl::OkStatus();
    std::function<absl::Status()> wait = std::move(wait_);
    wait_ = nullptr;
    return wait();
  }

 private:
  std::function<absl::Status()> wait_;
};

// What an all-reduce's tensors hold, once CheckAllReduceTensors accepts them.
struct AllReduceShape {
  DType dtype = DType::kFloat32;
  int64_t elements = 0;
  int64_t bytes = 0;
};
// The checks every implementation makes of StartAllReduce's tensors: one dtype for all, float32,
// int32 or int64, and float32 for kMean (InvalidArgument naming what is wrong otherwise).
absl::StatusOr<AllReduceShape> CheckAllReduceTensors(const std::vector<Tensor>& tensors,
                                                     ReduceOp op);

// The element types host-value collectives take (Communicator::AllReduceValues).
enum class ValueType { kInt64, kFloat64 };

// A fixed group of processes (ranks 0 .. size-1) that run collectives together, as
// torch.distributed's process group. Every rank calls the same collectives in the same order,
// with tensors of the same dtypes and shapes; a collective returns once this rank's part is
// done. Errors are absl::Status. A peer that does not join a collective within the
// implementation's timeout (dead, stalled, or stuck elsewhere) makes it fail with an error
// naming that rank and the collective; after such an error the group is broken, every later
// collective fails at once, and Abort() ends every rank's process.
//
// Tensors may live on any device: implementations either use device memory directly (NCCL) or
// copy through the host with train/backend/transfer.h.
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "MPI rank 0 of 2 on host-a", for messages.
  virtual std::string Describe() const = 0;
  // Where the collectives work in place: the CPU for one that takes tensors anywhere and copies
  // through the host (MPI), cuda:N for NCCL's, whose tensors must live on that GPU.
  virtual Device device() const { return Device::Cpu(); }

  // Reduces each tensor element-wise over the ranks, in place: once the returned collective is
  // waited for, every rank's tensors hold the result. The tensors share one dtype (float32 for
  // kMean; float32, int32 or int64 otherwise) and must not be touched until then.
  virtual absl::StatusOr<PendingCollective> StartAllReduce(std::vector<Tensor> tensors,
                                                           ReduceOp op) = 0;
  absl::Status AllReduce(std::vector<Tensor> tensors, ReduceOp op);
  // Copies rank `root`'s tensors into every other rank's, in place.
  virtual absl::Status Broadcast(std::vector<Tensor> tensors, int root) = 0;
  // Every rank's `t` stacked in rank order: [size, t.shape...], on `t`'s device. The ranks'
  // tensors must have the same dtype and shape.
  virtual absl::StatusOr<Tensor> AllGather(const Tensor& t) = 0;
  // Every rank's bytes, in rank order; their lengths may differ.
  virtual absl::StatusOr<std::vector<std::string>> AllGatherBytes(const std::string& bytes) = 0;
  virtual absl::Status Barrier() = 0;

  // Seconds spent running collectives so far (from a collective's start to its end on this
  // rank, waiting for peers included): what overlap figures compare the caller's waits with.
  virtual double busy_seconds() const = 0;

  // Host numbers the ranks agree on (step counts, metric sums), reduced in place. kMean is
  // for kFloat64 only.
  absl::Status AllReduceValues(absl::Span<int64_t> values, ReduceOp op) {
    return AllReduceHost(values.data(), static_cast<int64_t>(values.size()), ValueType::kInt64, op);
  }
  absl::Status AllReduceValues(absl::Span<double> values, ReduceOp op) {
    return AllReduceHost(values.data(), static_cast<int64_t>(values.size()), ValueType::kFloat64,
                         op);
  }

  // Ends the processes of every rank with `exit_code` (MPI_Abort): the way out after an error
  // that leaves peers waiting in a collective.
  [[noreturn]] virtual void Abort(int exit_code) = 0;

 protected:
  virtual absl::Status AllReduceHost(void* data, int64_t count, ValueType type, ReduceOp op) = 0;
};

}  // namespace sluice::distributed

#endif  // SLUICE_DISTRIBUTED_COMMUNICATOR_H_
