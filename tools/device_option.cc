#include "tools/device_option.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "train/backend/backend.h"

namespace sluice::tools {

absl::StatusOr<Device> ParseDevice(absl::string_view text) {
  if (text == "cpu") return Device::Cpu();
  if (text == "cuda") return Device::Cuda(0);
  int index = 0;
  if (absl::ConsumePrefix(&text, "cuda:") && absl::SimpleAtoi(text, &index) && index >= 0) {
    return Device::Cuda(index);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--device: want cpu, cuda or cuda:N, got '", text, "'"));
}

OptionSpec<Device> DeviceOptionSpec() {
  return {.parse = [](absl::string_view, const std::string& text) { return ParseDevice(text); },
          .format = [](const Device& device) { return device.DebugString(); }};
}

absl::Status CheckDeviceAvailable(const Device& device) {
  absl::StatusOr<train::backend::Backend*> backend = train::backend::BackendFor(device);
  if (backend.ok()) return absl::OkStatus();
  return absl::Status(backend.status().code(), absl::StrCat("--device ", device.DebugString(), ": ",
                                                            backend.status().message()));
}

}  // namespace sluice::tools
