#ifndef SLUICE_DISTRIBUTED_DEVICE_COMMUNICATOR_H_
#define SLUICE_DISTRIBUTED_DEVICE_COMMUNICATOR_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/device.h"
#include "distributed/communicator.h"

namespace sluice::distributed {

struct DeviceCommunicatorOptions {
  // How long the set-up, and each collective, may take before the group is declared broken
  // instead of waiting for a dead peer for ever.
  absl::Duration timeout = absl::Seconds(300);
  // This rank's device index; -1: rank % the number of visible devices (one rank per GPU).
  int device = -1;
};

// The communicator whose collectives work in the memory of `type`'s devices (NCCL's for CUDA),
// bootstrapped through `bootstrap`, a host communicator of the same ranks that the caller keeps.
// It comes from the device's plugin (train/backend/plugin.h), loaded first when needed: the
// plugin's load error when it does not load, Unimplemented when the plugin has no communicator
// (built without NCCL; host collectives, MPI's, are then the way). The result's device() is the
// device this rank uses.
absl::StatusOr<std::unique_ptr<Communicator>> CreateDeviceCommunicator(
    DeviceType type, Communicator& bootstrap, const DeviceCommunicatorOptions& options = {});

// What a plugin exports for CreateDeviceCommunicator, extern "C" (libsluice_cuda.so: NCCL's):
//   void sluice_plugin_create_communicator(Communicator* bootstrap,
//       const DeviceCommunicatorOptions* options,
//       absl::StatusOr<std::unique_ptr<Communicator>>* result);
// Looked up by name, so that the plugin does not call into distributed/ to register it.
inline constexpr char kCreateCommunicatorSymbol[] = "sluice_plugin_create_communicator";
using CreateCommunicatorFunction = void (*)(Communicator* bootstrap,
                                            const DeviceCommunicatorOptions* options,
                                            absl::StatusOr<std::unique_ptr<Communicator>>* result);

}  // namespace sluice::distributed

#endif  // SLUICE_DISTRIBUTED_DEVICE_COMMUNICATOR_H_
