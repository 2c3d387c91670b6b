#include "core/buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <new>

#include "core/device.h"
#include "core/mutex.h"

namespace sluice {

std::shared_ptr<BufferPool> BufferPool::Create(size_t max_free, size_t max_free_bytes) {
  return std::shared_ptr<BufferPool>(new BufferPool(max_free, max_free_bytes));
}

BufferPool::~BufferPool() {
  for (const Block& b : free_) std::free(b.data);
}

std::shared_ptr<Buffer> BufferPool::Get(size_t size) {
  const size_t rounded =
      std::max<size_t>(Buffer::kAlignment,
                       (size + Buffer::kAlignment - 1) / Buffer::kAlignment * Buffer::kAlignment);
  void* data = nullptr;
  size_t block = rounded;
  {
    MutexLock l(&mu_);
    const size_t most = rounded + rounded / 4;
    auto best = free_.rend();
    for (auto it = free_.rbegin(); it != free_.rend(); ++it) {
      if (it->size >= rounded && it->size <= most &&
          (best == free_.rend() || it->size < best->size)) {
        best = it;
        if (it->size == rounded) break;
      }
    }
    if (best != free_.rend()) {
      data = best->data;
      block = best->size;
      free_bytes_ -= block;
      free_.erase(std::next(best).base());
    }
  }
  if (data == nullptr) data = std::aligned_alloc(Buffer::kAlignment, rounded);
  if (data == nullptr) throw std::bad_alloc();  // As Buffer::Allocate.
  std::weak_ptr<BufferPool> pool = weak_from_this();
  return Buffer::Wrap(data, size, Device::Cpu(), [pool, block](void* p) {
    if (auto keep = pool.lock(); keep && keep->Put(p, block)) return;
    std::free(p);
  });
}

size_t BufferPool::free_blocks() const {
  MutexLock l(&mu_);
  return free_.size();
}

bool BufferPool::Put(void* data, size_t size) {
  MutexLock l(&mu_);
  if (free_.size() >= max_free_ || size > max_free_bytes_ - free_bytes_) return false;
  free_.push_back({data, size});
  free_bytes_ += size;
  return true;
}

}  // namespace sluice
