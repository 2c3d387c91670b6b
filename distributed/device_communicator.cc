#include "distributed/device_communicator.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/plugin.h"

namespace sluice::distributed {

absl::StatusOr<std::unique_ptr<Communicator>> CreateDeviceCommunicator(
    DeviceType type, Communicator& bootstrap, const DeviceCommunicatorOptions& options) {
  SLUICE_RETURN_IF_ERROR(train::backend::LoadPlugin(type));
  absl::StatusOr<void*> symbol = train::backend::PluginSymbol(type, kCreateCommunicatorSymbol);
  if (!symbol.ok()) {
    return absl::UnimplementedError(
        absl::StrCat("no collectives in ", Device{type, 0}.DebugString(),
                     "'s memory: sluice's plugin for it was built without NCCL"));
  }
  absl::StatusOr<std::unique_ptr<Communicator>> result =
      absl::InternalError("the plugin's communicator factory returned nothing");
  reinterpret_cast<CreateCommunicatorFunction> (*symbol)(&bootstrap, &options, &result);
  return result;
}

}  // namespace sluice::distributed
