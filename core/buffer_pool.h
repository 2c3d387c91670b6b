#ifndef SLUICE_CORE_BUFFER_POOL_H_
#define SLUICE_CORE_BUFFER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer.h"
#include "core/mutex.h"

namespace sluice {

// Recycles the memory of large CPU buffers for later buffers of about the same size. Blocks of a
// few hundred KB and more are what malloc hands back to the kernel (or takes from fresh mmaps):
// every page of the next one then faults and is zeroed, which costed the JPEG pipeline a quarter
// of its CPU time. A buffer from Get returns its memory to the pool when its last reference drops,
// unless the pool already keeps `max_free` blocks or `max_free_bytes`, or is gone (buffers may
// outlive it).
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  static std::shared_ptr<BufferPool> Create(size_t max_free, size_t max_free_bytes = SIZE_MAX);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A CPU buffer of `size` bytes aligned as Buffer::Allocate's; its contents are undefined. It
  // reuses the smallest free block that holds `size` bytes with at most a quarter more to spare
  // (images of nearby sizes share blocks), the most recently freed of equals.
  std::shared_ptr<Buffer> Get(size_t size);

  // Blocks kept for reuse now.
  size_t free_blocks() const;

 private:
  struct Block {
    void* data;
    size_t size;
  };

  BufferPool(size_t max_free, size_t max_free_bytes)
      : max_free_(max_free), max_free_bytes_(max_free_bytes) {}
  // Keeps a block; false when full.
  bool Put(void* data, size_t size);

  const size_t max_free_;
  const size_t max_free_bytes_;
  mutable Mutex mu_;
  std::vector<Block> free_ ABSL_GUARDED_BY(mu_);  // most recently freed last: warmest in cache
  size_t free_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sluice

#endif  // SLUICE_CORE_BUFFER_POOL_H_
