#include "train/backend/cpu/cpu_allocator.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <new>
#include <vector>

#include "core/mutex.h"
#include "core/trace_recorder.h"

namespace sluice::train::backend::cpu {
namespace {

struct Pool {
  Mutex mu;
  std::map<size_t, std::vector<void*>> free ABSL_GUARDED_BY(mu);  // by rounded size
  size_t cached ABSL_GUARDED_BY(mu) = 0;
  int64_t reuses ABSL_GUARDED_BY(mu) = 0;
  size_t live ABSL_GUARDED_BY(mu) = 0;
  size_t peak_live ABSL_GUARDED_BY(mu) = 0;
  size_t peak_held ABSL_GUARDED_BY(mu) = 0;
  size_t max_live ABSL_GUARDED_BY(mu) = 0;  // never reset, unlike peak_live
};

// Never destroyed: tensors may be released during static destruction.
Pool& GetPool() {
  static Pool* pool = new Pool;
  return *pool;
}

constexpr size_t kPage = 4096;

// Counts `size` more bytes alive, and the high-water marks that follow.
void CountAlive(Pool& pool, size_t size) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pool.mu) {
  pool.live += size;
  pool.peak_live = std::max(pool.peak_live, pool.live);
  pool.max_live = std::max(pool.max_live, pool.live);
  pool.peak_held = std::max(pool.peak_held, pool.live + pool.cached);
}

size_t IdleLimit(const Pool& pool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pool.mu) {
  return std::max(CpuAllocator::kMinIdleLimitBytes, pool.max_live);
}

void Release(void* p, size_t size) {
  Pool& pool = GetPool();
  std::vector<void*> evicted;  // freed after the lock is dropped
  {
    MutexLock lock(&pool.mu);
    pool.live -= size;
    // The limit is at least max_live, which counted this block, so it fits once others go.
    const size_t limit = IdleLimit(pool);
    // Largest other sizes first: they are the likeliest to be stale (a batch no longer run).
    for (auto it = pool.free.rbegin(); pool.cached + size > limit && it != pool.free.rend();) {
      std::vector<void*>& blocks = it->second;
      if (it->first == size || blocks.empty()) {
        ++it;
        continue;
      }
      evicted.push_back(blocks.back());
      blocks.pop_back();
      pool.cached -= it->first;
    }
    // Only blocks of this very size are left idle: this one would replace one of them.
    if (pool.cached + size > limit) {
      evicted.push_back(p);
    } else {
      pool.free[size].push_back(p);
      pool.cached += size;
    }
  }
  for (void* q : evicted) std::free(q);
}

// A small block: counted while alive, never cached (malloc's own bins serve these well).
Tensor AllocateSmall(DType dtype, const Shape& shape, size_t bytes) {
  const size_t size =
      std::max<size_t>(Buffer::kAlignment,
                       (bytes + Buffer::kAlignment - 1) / Buffer::kAlignment * Buffer::kAlignment);
  void* p = std::aligned_alloc(Buffer::kAlignment, size);
  if (p == nullptr) throw std::bad_alloc();
  Pool& pool = GetPool();
  {
    MutexLock lock(&pool.mu);
    CountAlive(pool, size);
  }
  auto buffer = Buffer::Wrap(p, size, Device::Cpu(), [size](void* q) {
    Pool& pool = GetPool();
    {
      MutexLock lock(&pool.mu);
      pool.live -= size;
    }
    std::free(q);
  });
  return *Tensor::FromBuffer(dtype, shape, std::move(buffer));
}

}  // namespace

Tensor CpuAllocator::Allocate(DType dtype, const Shape& shape) {
  const size_t bytes = static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
  if (dtype == DType::kBytes) return Tensor(dtype, shape);
  if (bytes < kMinCachedBytes) return AllocateSmall(dtype, shape, bytes);
  const size_t size = (bytes + kPage - 1) / kPage * kPage;
  void* p = nullptr;
  Pool& pool = GetPool();
  {
    MutexLock lock(&pool.mu);
    auto it = pool.free.find(size);
    if (it != pool.free.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      pool.cached -= size;
      ++pool.reuses;
    }
    // Counted under the lock held here; a failed system allocation below takes it back.
    CountAlive(pool, size);
  }
  if (p == nullptr) {
    p = std::aligned_alloc(kPage, size);
    if (p == nullptr) {
      MutexLock lock(&pool.mu);
      pool.live -= size;
      throw std::bad_alloc();
    }
  }
  auto buffer = Buffer::Wrap(p, size, Device::Cpu(), [size](void* q) { Release(q, size); });
  return *Tensor::FromBuffer(dtype, shape, std::move(buffer));
}

void CpuAllocator::ReleaseCached() {
  std::map<size_t, std::vector<void*>> idle;
  {
    Pool& pool = GetPool();
    MutexLock lock(&pool.mu);
    idle.swap(pool.free);
    pool.cached = 0;
  }
  for (auto& [size, blocks] : idle) {
    for (void* p : blocks) std::free(p);
  }
}

size_t CpuAllocator::cached_bytes() {
  MutexLock lock(&GetPool().mu);
  return GetPool().cached;
}

size_t CpuAllocator::idle_limit_bytes() {
  MutexLock lock(&GetPool().mu);
  return IdleLimit(GetPool());
}

int64_t CpuAllocator::reuses() {
  MutexLock lock(&GetPool().mu);
  return GetPool().reuses;
}

size_t CpuAllocator::live_bytes() {
  MutexLock lock(&GetPool().mu);
  return GetPool().live;
}

size_t CpuAllocator::peak_live_bytes() {
  MutexLock lock(&GetPool().mu);
  return GetPool().peak_live;
}

size_t CpuAllocator::peak_held_bytes() {
  MutexLock lock(&GetPool().mu);
  return GetPool().peak_held;
}

void CpuAllocator::ResetPeak() {
  Pool& pool = GetPool();
  MutexLock lock(&pool.mu);
  pool.peak_live = pool.live;
  pool.peak_held = pool.live + pool.cached;
}

namespace {
// The profiler's counter tracks of this allocator: tensor bytes in use, and idle in its cache.
[[maybe_unused]] const int profiler_counters =
    profiler::RegisterCounterSource([](const profiler::CounterReporter& report) {
      report("cpu_allocator live_bytes", static_cast<double>(CpuAllocator::live_bytes()));
      report("cpu_allocator cached_bytes", static_cast<double>(CpuAllocator::cached_bytes()));
    });
}  // namespace

}  // namespace sluice::train::backend::cpu
