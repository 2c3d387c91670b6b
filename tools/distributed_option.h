#ifndef SLUICE_TOOLS_DISTRIBUTED_OPTION_H_
#define SLUICE_TOOLS_DISTRIBUTED_OPTION_H_

#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/device.h"
#include "distributed/communicator.h"
#include "distributed/mpi_communicator.h"

namespace sluice::tools {

// The processes of a `--distributed` run, one rank each, as mpirun (or srun) started them: MPI's
// communicator, and on CUDA devices NCCL's (from libsluice_cuda.so,
// distributed/device_communicator.h), bootstrapped through it, which then all-reduces the gradients
// in device memory.
class DistributedRun {
 public:
  // Joins the job. On a CUDA `device`, rank r takes GPU r % (the GPUs it sees), and `device`
  // becomes that GPU. A failure is printed as "<program>: --distributed...: why" (ending the
  // whole job when others are in it); then nullopt.
  static std::optional<DistributedRun> Start(absl::string_view program, absl::Duration timeout,
                                             Device& device);

  // What the training's collectives go through: NCCL's where there is one, else MPI's.
  distributed::Communicator* collectives() const;
  int rank() const { return mpi_->rank(); }

  // Prints "<program>: rank R: why" and ends the whole job (peers may wait in a collective for
  // this rank); returns the exit status when this process is the only one.
  int Fail(absl::string_view program, const absl::Status& status);

 private:
  std::unique_ptr<distributed::MpiCommunicator> mpi_;
  std::unique_ptr<distributed::Communicator> device_;  // NCCL's on CUDA devices, else null
};

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_DISTRIBUTED_OPTION_H_
