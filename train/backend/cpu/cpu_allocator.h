#ifndef SLUICE_TRAIN_BACKEND_CPU_CPU_ALLOCATOR_H_
#define SLUICE_TRAIN_BACKEND_CPU_CPU_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>

#include "core/tensor.h"

namespace sluice::train::backend::cpu {

// Tensors for the CPU backend from a cache of freed blocks. A training step
// allocates the same large activations and gradients every time; fresh
// megabyte-sized blocks come from mmap and are paid for again in page faults
// (about a tenth of a CNN step before this cache; a fifth of an imported
// ResNet-18's at 224x224, whose step needs gigabytes). Blocks of at least
// kMinCachedBytes go back to a per-size free list when their last tensor goes.
// The idle limit is the larger of kMinIdleLimitBytes and the most bytes ever
// alive at once: a step's working set stays mapped for the next step, and
// the process never holds more than twice what it once needed. A release
// that would pass the limit evicts other idle blocks, largest first, so a
// changed shape (an evaluation batch) replaces stale sizes. Thread-safe.
class CpuAllocator {
 public:
  static constexpr size_t kMinCachedBytes = 64 * 1024;
  static constexpr size_t kMinIdleLimitBytes = size_t{512} << 20;

  // An uninitialised numeric tensor (kBytes tensors are allocated directly).
  static Tensor Allocate(DType dtype, const Shape& shape);

  // Bytes idle in the cache now, the most it keeps idle now, and how many
  // allocations it served.
  static size_t cached_bytes();
  // Frees every idle block (Backend::ReleaseCachedMemory).
  static void ReleaseCached();
  static size_t idle_limit_bytes();
  static int64_t reuses();

  // Bytes of the tensors this allocator made that are alive now, and the most there have been
  // since the start (or the last ResetPeak): a training step's activations and gradients, without
  // the pipeline's buffers or the process's other memory that a max-RSS figure mixes in. Small
  // tensors count too, though only blocks of kMinCachedBytes or more are cached.
  static size_t live_bytes();
  static size_t peak_live_bytes();
  // The most the allocator has held from the system (alive plus idle in the cache).
  static size_t peak_held_bytes();
  static void ResetPeak();
};

}  // namespace sluice::train::backend::cpu

#endif  // SLUICE_TRAIN_BACKEND_CPU_CPU_ALLOCATOR_H_
