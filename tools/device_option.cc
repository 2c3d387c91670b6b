#include "tools/device_option.h"

#include "absl/strings/str_cat.h"
#include "core/status_context.h"
#include "train/backend/backend.h"

namespace sluice::tools {

absl::StatusOr<Device> ParseDeviceOption(absl::string_view text) {
  absl::StatusOr<Device> device = ParseDevice(text);
  if (device.ok()) return device;
  return absl::InvalidArgumentError(absl::StrCat("--device: ", device.status().message()));
}

OptionSpec<Device> DeviceOptionSpec() {
  return {
      .parse = [](absl::string_view, const std::string& text) { return ParseDeviceOption(text); },
      .format = [](const Device& device) { return device.DebugString(); }};
}

absl::Status CheckDeviceAvailable(const Device& device) {
  absl::StatusOr<train::backend::Backend*> backend = train::backend::BackendFor(device);
  if (backend.ok()) return absl::OkStatus();
  return WithContext(backend.status(), absl::StrCat("--device ", device.DebugString(), ": "));
}

}  // namespace sluice::tools
