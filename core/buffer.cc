#include "core/buffer.h"

#include <cstdint>
#include <cstdlib>
#include <new>

namespace sluice {

std::shared_ptr<Buffer> Buffer::Allocate(size_t size, std::function<void(void*)> destroy) {
  // aligned_alloc needs a size that is a multiple of the alignment; a
  // zero-size buffer still gets a unique, valid pointer.
  // A size within an alignment of SIZE_MAX (a negative count cast to size_t) would round to 0.
  if (size > SIZE_MAX - kAlignment) throw std::bad_alloc();
  const size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (p == nullptr) throw std::bad_alloc();
  return std::shared_ptr<Buffer>(
      new Buffer(p, size, Device::Cpu(), [destroy = std::move(destroy)](void* data) {
        if (destroy) destroy(data);
        std::free(data);
      }));
}

std::shared_ptr<Buffer> Buffer::Wrap(void* data, size_t size, Device device,
                                     std::function<void(void*)> release) {
  return std::shared_ptr<Buffer>(new Buffer(data, size, device, std::move(release)));
}

Buffer::~Buffer() {
  if (release_) release_(data_);
}

}  // namespace sluice
