#ifndef SLUICE_CORE_DEVICE_H_
#define SLUICE_CORE_DEVICE_H_

#include <string>

namespace sluice {

enum class DeviceType { kCpu, kCuda };

// Where a tensor's memory lives.
struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;

  static Device Cpu() { return {}; }
  static Device Cuda(int index = 0) { return {DeviceType::kCuda, index}; }
  bool is_cpu() const { return type == DeviceType::kCpu; }
  // "cpu" or "cuda:0".
  std::string DebugString() const {
    return type == DeviceType::kCpu ? "cpu" : "cuda:" + std::to_string(index);
  }
  friend bool operator==(const Device& a, const Device& b) {
    return a.type == b.type && a.index == b.index;
  }
};

}  // namespace sluice

#endif  // SLUICE_CORE_DEVICE_H_
