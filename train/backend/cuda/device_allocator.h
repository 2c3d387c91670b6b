#ifndef SLUICE_TRAIN_BACKEND_CUDA_DEVICE_ALLOCATOR_H_
#define SLUICE_TRAIN_BACKEND_CUDA_DEVICE_ALLOCATOR_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "core/tensor.h"

namespace sluice::train::backend::cuda {

// A caching allocator of device memory, one per device. Freed blocks are kept
// in free lists keyed by (stream, size bucket) and handed out again, so that a
// training loop whose tensor sizes repeat step after step stops calling
// cudaMalloc (which synchronises the device) after its first step.
//
// Reuse is stream-ordered: a block freed while kernels queued on stream S may
// still read it is only given again to work on S, which runs after them. A
// block is never handed to another stream, so no event is needed.
// Thread-safe.
class DeviceAllocator {
 public:
  struct Stats {
    int64_t bytes_in_use = 0;        // held by live allocations (bucket sizes)
    int64_t bytes_cached = 0;        // freed, kept for reuse
    int64_t peak_bytes_in_use = 0;   // since creation
    int64_t device_allocations = 0;  // cudaMalloc calls since creation
    int64_t cache_hits = 0;          // allocations served from the cache
  };

  // The allocator of `device`, made on first use and never destroyed (tensors
  // may be released during static destruction).
  static DeviceAllocator& ForDevice(int device);

  // The size class a request of `bytes` is served from: multiples of 512
  // bytes below 1 MiB, then four classes per power of two (at most 25% slack).
  static size_t BucketSize(size_t bytes);

  // At least `bytes` of device memory for work queued on `stream`. On cudaMalloc failure the
  // cache is emptied and the allocation retried once, except while a graph is being captured.
  absl::StatusOr<void*> Allocate(size_t bytes, cudaStream_t stream);
  // Returns `ptr` (from Allocate) to the cache. Makes no CUDA call, so it may
  // run from a Buffer's release at any time.
  void Free(void* ptr);
  // An uninitialised tensor on this device whose buffer returns to the cache
  // when its last view is dropped.
  absl::StatusOr<Tensor> AllocateTensor(DType dtype, const Shape& shape, cudaStream_t stream);

  // A CUDA graph's private pool (cuda_graph.cc): blocks allocated for `stream` (a capture
  // stream) while it is reserved are its own. EmptyCache keeps them, since a graph's kernels
  // write them at every launch.
  void Reserve(cudaStream_t stream);
  // Ends the reservation: the blocks of `stream`, cached or live, become `to`'s. Call once the
  // graph is gone and its launches on `to` were the last work on them.
  void Unreserve(cudaStream_t stream, cudaStream_t to);

  // Brackets a graph capture on the calling thread (cuda_graph.cc). While any capture is under
  // way, the device must not be synchronised from any thread: that would invalidate the capture.
  void CaptureBegins();
  void CaptureEnds();

  // Releases every cached block to the driver (cudaFree waits for the device), except those of
  // reserved streams. Waits for captures under way on other threads to end; on the capturing
  // thread itself it is FailedPrecondition.
  absl::Status EmptyCache();
  Stats GetStats() const;
  int device() const { return device_; }

 private:
  explicit DeviceAllocator(int device) : device_(device) {}

  struct Block {
    size_t size;  // bucket size
    cudaStream_t stream;
  };
  struct KeyHash {
    size_t operator()(const std::pair<cudaStream_t, size_t>& k) const {
      return std::hash<const void*>()(k.first) * 31 + std::hash<size_t>()(k.second);
    }
  };

  // Waits for the device, then frees the cached blocks of unreserved streams. Not while any
  // thread captures a graph (the callers check).
  absl::Status EmptyCacheLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `stream` is a graph's (Reserve).
  bool ReservedLocked(cudaStream_t stream) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int device_;
  mutable Mutex mu_;
  std::unordered_map<void*, Block> live_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<std::pair<cudaStream_t, size_t>, std::vector<void*>, KeyHash> free_
      ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  std::vector<cudaStream_t> reserved_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread::id> capturing_ ABSL_GUARDED_BY(mu_);  // one entry per capture
  CondVar capture_ended_;
};

}  // namespace sluice::train::backend::cuda

#endif  // SLUICE_TRAIN_BACKEND_CUDA_DEVICE_ALLOCATOR_H_
