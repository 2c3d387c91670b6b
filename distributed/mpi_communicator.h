#ifndef SLUICE_DISTRIBUTED_MPI_COMMUNICATOR_H_
#define SLUICE_DISTRIBUTED_MPI_COMMUNICATOR_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/mutex.h"
#include "distributed/communicator.h"

namespace sluice::distributed {

struct MpiCommunicatorOptions {
  // How long a collective waits for its peers before it fails, naming the ranks that never
  // joined it. Generous by default: the first collective also waits for the slowest start-up.
  absl::Duration timeout = absl::Seconds(300);
};

// The group of processes mpirun (or srun) started: MPI_COMM_WORLD.
//
// One thread of the communicator's own makes every MPI call (MPI_THREAD_FUNNELED), from
// MPI_Init to MPI_Finalize, running the collectives in the order they were started; the caller
// goes on while a started all-reduce runs (overlapping communication with the backward pass).
// Each collective is non-blocking (MPI_Iallreduce, ...) and polled against a deadline, and
// every rank tells every peer, in a message beside it, which collective it has reached: on a
// timeout the error names the ranks that never arrived, and a peer that is at another
// collective is reported as a mismatch. The cost is 2 (size - 1) small messages per collective.
//
// Tensors on the host are reduced in their own memory; tensors on another device are copied to
// the host and back through the backend.
//
// MPI allows one initialisation per process, so Create succeeds once per process. A
// communicator that saw a timeout does not call MPI_Finalize (which would wait for the dead
// peer) and the process should end with Abort or exit.
class MpiCommunicator final : public Communicator {
 public:
  static absl::StatusOr<std::unique_ptr<MpiCommunicator>> Create(
      MpiCommunicatorOptions options = {});
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string Describe() const override;

  absl::StatusOr<PendingCollective> StartAllReduce(std::vector<Tensor> tensors,
                                                   ReduceOp op) override;
  absl::Status Broadcast(std::vector<Tensor> tensors, int root) override;
  absl::StatusOr<Tensor> AllGather(const Tensor& t) override;
  absl::StatusOr<std::vector<std::string>> AllGatherBytes(const std::string& bytes) override;
  absl::Status Barrier() override;
  double busy_seconds() const override;
  [[noreturn]] void Abort(int exit_code) override;

  // Collectives run so far, for tests and statistics.
  int64_t collectives() const;

 protected:
  absl::Status AllReduceHost(void* data, int64_t count, ValueType type, ReduceOp op) override;

 private:
  struct Job;
  struct Mpi;  // the MPI handles, kept out of this header
  explicit MpiCommunicator(MpiCommunicatorOptions options);

  // Queues `job` for the worker; Wait() on the result waits for it.
  std::shared_ptr<Job> Submit(std::shared_ptr<Job> job);
  absl::Status WaitFor(Job& job);
  // The worker thread: initialises MPI, runs jobs, finalises.
  void Run();
  struct Collective;  // a job's collective on the worker, with its arrival messages
  absl::Status Execute(Job& job);
  // Marks the group broken by `status`: later collectives fail at once. Returns `status`.
  absl::Status Break(absl::Status status);

  MpiCommunicatorOptions options_;
  std::unique_ptr<Mpi> mpi_;
  int rank_ = 0;
  int size_ = 1;
  std::string host_;
  std::thread worker_;
  // Callers blocked in WaitFor: while there is one, the worker polls without sleeping (the
  // caller's core is idle anyway); otherwise it sleeps between polls, leaving the core to the
  // computation the collective overlaps.
  std::atomic<int> waiting_{0};
  // Set by Abort on another thread: the worker calls MPI_Abort with it.
  std::atomic<int> abort_code_{-1};

  mutable Mutex mu_;
  CondVar cv_;  // signals a queued job, stop_, and started_
  std::deque<std::shared_ptr<Job>> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;  // the worker finished MPI_Init
  absl::Status init_status_ ABSL_GUARDED_BY(mu_);
  // Set by the first failed collective: the group is broken, later ones fail at once.
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  int64_t collectives_ ABSL_GUARDED_BY(mu_) = 0;
  // Jobs whose collective failed, kept with their buffers (worker only).
  std::vector<std::shared_ptr<Job>> abandoned_;
  double busy_seconds_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sluice::distributed

#endif  // SLUICE_DISTRIBUTED_MPI_COMMUNICATOR_H_
