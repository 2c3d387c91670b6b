#include "tools/distributed_option.h"

#include <cstdio>
#include <string>
#include <utility>

#include "distributed/device_communicator.h"
#include "tools/command_line.h"

namespace sluice::tools {

std::optional<DistributedRun> DistributedRun::Start(absl::string_view program,
                                                    absl::Duration timeout, Device& device) {
  const std::string name(program);
  absl::StatusOr<std::unique_ptr<distributed::MpiCommunicator>> mpi =
      distributed::MpiCommunicator::Create({.timeout = timeout});
  if (!mpi.ok()) {
    std::fprintf(stderr, "%s: --distributed: %s\n", name.c_str(),
                 std::string(mpi.status().message()).c_str());
    return std::nullopt;
  }
  DistributedRun run;
  run.mpi_ = *std::move(mpi);
  if (!device.is_cpu()) {
    absl::StatusOr<std::unique_ptr<distributed::Communicator>> on_device =
        distributed::CreateDeviceCommunicator(device.type, *run.mpi_, {.timeout = timeout});
    if (absl::IsUnimplemented(on_device.status())) return run;  // MPI copies through the host
    if (!on_device.ok()) {
      std::fprintf(stderr, "%s: --distributed on %s: %s\n", name.c_str(),
                   device.DebugString().c_str(), std::string(on_device.status().message()).c_str());
      if (run.mpi_->size() > 1) run.mpi_->Abort(kExitFailure);
      return std::nullopt;
    }
    run.device_ = *std::move(on_device);
    device = run.device_->device();
  }
  return run;
}

distributed::Communicator* DistributedRun::collectives() const {
  if (device_ != nullptr) return device_.get();
  return mpi_.get();
}

int DistributedRun::Fail(absl::string_view program, const absl::Status& status) {
  std::fprintf(stderr, "%.*s: rank %d: %s\n", static_cast<int>(program.size()), program.data(),
               mpi_->rank(), std::string(status.message()).c_str());
  if (mpi_->size() > 1) mpi_->Abort(kExitFailure);
  return kExitFailure;
}

}  // namespace sluice::tools
