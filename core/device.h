#ifndef SLUICE_CORE_DEVICE_H_
#define SLUICE_CORE_DEVICE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice {

// kGuarded is a test device (tests/train/backend/guarded_backend.h): host memory the host may
// not read, so that a test crashes wherever code above the backend touches device memory.
enum class DeviceType { kCpu, kCuda, kGuarded };

// Where a tensor's memory lives.
struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;

  static Device Cpu() { return {}; }
  static Device Cuda(int index = 0) { return {DeviceType::kCuda, index}; }
  static Device Guarded(int index = 0) { return {DeviceType::kGuarded, index}; }
  bool is_cpu() const { return type == DeviceType::kCpu; }
  // "cpu", "cuda:0" or "guarded:0".
  std::string DebugString() const {
    switch (type) {
      case DeviceType::kCpu:
        return "cpu";
      case DeviceType::kCuda:
        return "cuda:" + std::to_string(index);
      case DeviceType::kGuarded:
        return "guarded:" + std::to_string(index);
    }
    return "unknown";
  }
  friend bool operator==(const Device& a, const Device& b) {
    return a.type == b.type && a.index == b.index;
  }
};

// A device as users name it: "cpu", "cuda" (cuda:0), "cuda:N", and the spellings of PyTorch and
// TensorFlow ("gpu:N", "/gpu:N", "/device:GPU:N"), in any case. InvalidArgument "want cpu, cuda or
// cuda:N, got 'tpu'" for another name. The test device has no name.
absl::StatusOr<Device> ParseDevice(absl::string_view name);

}  // namespace sluice

#endif  // SLUICE_CORE_DEVICE_H_
