#include "core/device.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace sluice {

absl::StatusOr<Device> ParseDevice(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  absl::string_view rest(lower);
  // TensorFlow's spellings: /device:GPU:0, /gpu:0.
  if (!absl::ConsumePrefix(&rest, "/device:")) absl::ConsumePrefix(&rest, "/");
  DeviceType type = DeviceType::kCpu;
  bool known = true;
  if (absl::ConsumePrefix(&rest, "cpu")) {
    type = DeviceType::kCpu;
  } else if (absl::ConsumePrefix(&rest, "cuda") || absl::ConsumePrefix(&rest, "gpu")) {
    type = DeviceType::kCuda;
  } else {
    known = false;
  }
  int index = 0;
  if (known && !rest.empty()) {
    known = absl::ConsumePrefix(&rest, ":") && absl::SimpleAtoi(rest, &index) && index >= 0 &&
            (type != DeviceType::kCpu || index == 0);
  }
  if (!known) {
    return absl::InvalidArgumentError(absl::StrCat("want cpu, cuda or cuda:N, got '", name, "'"));
  }
  return Device{type, index};
}

}  // namespace sluice
