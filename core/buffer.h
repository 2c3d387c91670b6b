#ifndef SLUICE_CORE_BUFFER_H_
#define SLUICE_CORE_BUFFER_H_

#include <cstddef>
#include <functional>
#include <memory>

#include "core/device.h"

namespace sluice {

// A block of memory shared by the tensors that view it. Reference counting is
// done by std::shared_ptr; the release function runs when the last view goes.
class Buffer {
 public:
  static constexpr size_t kAlignment = 64;

  // Allocates `size` bytes on the CPU, aligned to kAlignment. `destroy`, if
  // given, runs on the memory before it is freed (kBytes tensors destroy their
  // strings this way).
  static std::shared_ptr<Buffer> Allocate(size_t size,
                                          std::function<void(void*)> destroy = nullptr);
  // Wraps memory owned elsewhere (device memory, a pinned host block, an
  // mmap). `release` runs once, when the last reference drops.
  static std::shared_ptr<Buffer> Wrap(void* data, size_t size, Device device,
                                      std::function<void(void*)> release);

  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  Device device() const { return device_; }

 private:
  Buffer(void* data, size_t size, Device device, std::function<void(void*)> release)
      : data_(data), size_(size), device_(device), release_(std::move(release)) {}

  void* data_;
  size_t size_;
  Device device_;
  std::function<void(void*)> release_;
};

}  // namespace sluice

#endif  // SLUICE_CORE_BUFFER_H_
