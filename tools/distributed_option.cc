#include "tools/distributed_option.h"

#include <cstdio>
#include <string>
#include <utility>

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
#ifdef SLUICE_HAVE_NCCL
  if (device.type == DeviceType::kCuda) {
    absl::StatusOr<std::unique_ptr<distributed::NcclCommunicator>> nccl =
        distributed::NcclCommunicator::Create(*run.mpi_, {.timeout = timeout});
    if (!nccl.ok()) {
      std::fprintf(stderr, "%s: --distributed on %s: %s\n", name.c_str(),
                   device.DebugString().c_str(), std::string(nccl.status().message()).c_str());
      if (run.mpi_->size() > 1) run.mpi_->Abort(kExitFailure);
      return std::nullopt;
    }
    run.nccl_ = *std::move(nccl);
    device = Device::Cuda(run.nccl_->device());
  }
#endif
  return run;
}

distributed::Communicator* DistributedRun::collectives() const {
#ifdef SLUICE_HAVE_NCCL
  if (nccl_ != nullptr) return nccl_.get();
#endif
  return mpi_.get();
}

int DistributedRun::Fail(absl::string_view program, const absl::Status& status) {
  std::fprintf(stderr, "%.*s: rank %d: %s\n", static_cast<int>(program.size()), program.data(),
               mpi_->rank(), std::string(status.message()).c_str());
  if (mpi_->size() > 1) mpi_->Abort(kExitFailure);
  return kExitFailure;
}

}  // namespace sluice::tools
