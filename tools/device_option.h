#ifndef SLUICE_TOOLS_DEVICE_OPTION_H_
#define SLUICE_TOOLS_DEVICE_OPTION_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/device.h"
#include "tools/option_table.h"

namespace sluice::tools {

// The --device option of `sluice train` and `sluice bench`: sluice::ParseDevice ("cpu", "cuda",
// "cuda:N"; the guarded test device is not offered to users), its error after "--device: ".
absl::StatusOr<Device> ParseDeviceOption(absl::string_view text);

// A --device option's row spec: ParseDeviceOption, and the device's name for --help.
OptionSpec<Device> DeviceOptionSpec();

// OK when `device` has a backend here; otherwise the backend's own reason (a build without
// CUDA, no GPU, an index past the last GPU) after "--device cuda:N: ".
absl::Status CheckDeviceAvailable(const Device& device);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_DEVICE_OPTION_H_
