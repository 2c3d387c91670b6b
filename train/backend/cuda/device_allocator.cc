#include "train/backend/cuda/device_allocator.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "train/backend/cuda/cuda_check.h"
#include "train/backend/cuda/device_scope.h"

namespace sluice::train::backend::cuda {
namespace {

constexpr size_t kSmallGranule = 512;
constexpr size_t kSmallLimit = size_t{1} << 20;

}  // namespace

DeviceAllocator& DeviceAllocator::ForDevice(int device) {
  static Mutex* mu = new Mutex;
  // Never destroyed: buffers may be released during static destruction.
  static auto* allocators = new std::unordered_map<int, DeviceAllocator*>;
  MutexLock lock(mu);
  DeviceAllocator*& allocator = (*allocators)[device];
  if (allocator == nullptr) allocator = new DeviceAllocator(device);
  return *allocator;
}

size_t DeviceAllocator::BucketSize(size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  if (bytes < kSmallLimit) return (bytes + kSmallGranule - 1) / kSmallGranule * kSmallGranule;
  size_t power = kSmallLimit;
  while (power * 2 <= bytes) power *= 2;
  const size_t step = power / 4;
  return (bytes + step - 1) / step * step;
}

absl::StatusOr<void*> DeviceAllocator::Allocate(size_t bytes, cudaStream_t stream) {
  const size_t size = BucketSize(bytes);
  MutexLock lock(&mu_);
  void* ptr = nullptr;
  auto it = free_.find({stream, size});
  if (it != free_.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
    stats_.bytes_cached -= static_cast<int64_t>(size);
    ++stats_.cache_hits;
  } else {
    DeviceScope scope(device_);
    CUDA_RETURN_IF_ERROR(scope.status());
    // A thread capturing a CUDA graph may not call cudaMalloc in its capture mode; the block is
    // not part of the graph (it is the graph's pool), so the call is safe in relaxed mode.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CUDA_RETURN_IF_ERROR(cudaThreadExchangeStreamCaptureMode(&mode));
    cudaError_t err = cudaMalloc(&ptr, size);
    cudaThreadExchangeStreamCaptureMode(&mode);
    // The retry empties the cache, which waits for the device: not while any thread captures a
    // graph, which that would break. Nor does it wait for the capture to end: its caller may
    // hold a lock the capturing thread needs (the backend's library lock).
    const bool capturing = !capturing_.empty();
    if (err == cudaErrorMemoryAllocation && stats_.bytes_cached > 0 && !capturing) {
      cudaGetLastError();  // clear it: the retry decides
      SLUICE_RETURN_IF_ERROR(EmptyCacheLocked());
      err = cudaMalloc(&ptr, size);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      return CudaStatus(
          err,
          absl::StrCat("cudaMalloc of ", size, " bytes on cuda:", device_, " (",
                       stats_.bytes_in_use, " bytes in use",
                       capturing && stats_.bytes_cached > 0
                           ? absl::StrCat("; ", stats_.bytes_cached,
                                          " cached bytes kept: a CUDA graph is being captured")
                           : "",
                       ")"),
          __FILE__, __LINE__);
    }
    ++stats_.device_allocations;
  }
  live_.emplace(ptr, Block{size, stream});
  stats_.bytes_in_use += static_cast<int64_t>(size);
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return ptr;
}

void DeviceAllocator::Free(void* ptr) {
  if (ptr == nullptr) return;
  MutexLock lock(&mu_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return;  // not ours: nothing we may do with it
  const Block block = it->second;
  live_.erase(it);
  free_[{block.stream, block.size}].push_back(ptr);
  stats_.bytes_in_use -= static_cast<int64_t>(block.size);
  stats_.bytes_cached += static_cast<int64_t>(block.size);
}

absl::StatusOr<Tensor> DeviceAllocator::AllocateTensor(DType dtype, const Shape& shape,
                                                       cudaStream_t stream) {
  if (dtype == DType::kBytes) {
    return absl::InvalidArgumentError("a string tensor cannot live on a CUDA device");
  }
  const size_t bytes = static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
  SLUICE_ASSIGN_OR_RETURN(void* ptr, Allocate(bytes, stream));
  std::shared_ptr<Buffer> buffer =
      Buffer::Wrap(ptr, bytes, Device::Cuda(device_), [this](void* p) { Free(p); });
  return Tensor::FromBuffer(dtype, shape, std::move(buffer));
}

bool DeviceAllocator::ReservedLocked(cudaStream_t stream) const {
  return std::find(reserved_.begin(), reserved_.end(), stream) != reserved_.end();
}

void DeviceAllocator::Reserve(cudaStream_t stream) {
  MutexLock lock(&mu_);
  reserved_.push_back(stream);
}

void DeviceAllocator::Unreserve(cudaStream_t stream, cudaStream_t to) {
  MutexLock lock(&mu_);
  reserved_.erase(std::remove(reserved_.begin(), reserved_.end(), stream), reserved_.end());
  // Taken out first: inserting into free_ while walking it could rehash it.
  std::vector<std::pair<size_t, std::vector<void*>>> moved;
  for (auto it = free_.begin(); it != free_.end();) {
    if (it->first.first != stream) {
      ++it;
      continue;
    }
    moved.emplace_back(it->first.second, std::move(it->second));
    it = free_.erase(it);
  }
  for (auto& [size, blocks] : moved) {
    std::vector<void*>& into = free_[{to, size}];
    into.insert(into.end(), blocks.begin(), blocks.end());
  }
  for (auto& [ptr, block] : live_) {
    if (block.stream == stream) block.stream = to;
  }
}

void DeviceAllocator::CaptureBegins() {
  MutexLock lock(&mu_);
  capturing_.push_back(std::this_thread::get_id());
}

void DeviceAllocator::CaptureEnds() {
  MutexLock lock(&mu_);
  auto it = std::find(capturing_.begin(), capturing_.end(), std::this_thread::get_id());
  if (it != capturing_.end()) capturing_.erase(it);
  capture_ended_.SignalAll();
}

absl::Status DeviceAllocator::EmptyCache() {
  MutexLock lock(&mu_);
  if (std::find(capturing_.begin(), capturing_.end(), std::this_thread::get_id()) !=
      capturing_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("EmptyCache on cuda:", device_,
                     " from a thread capturing a CUDA graph: emptying the cache waits for the "
                     "device, which a capture does not allow"));
  }
  // cudaDeviceSynchronize during another thread's capture would invalidate it. Only here: the
  // callers of EmptyCache hold no backend lock that a capturing thread needs.
  while (!capturing_.empty()) capture_ended_.Wait(&mu_);
  return EmptyCacheLocked();
}

absl::Status DeviceAllocator::EmptyCacheLocked() {
  DeviceScope scope(device_);
  CUDA_RETURN_IF_ERROR(scope.status());
  // Kernels queued before a block was freed may still be reading it.
  CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  for (auto it = free_.begin(); it != free_.end();) {
    if (ReservedLocked(it->first.first)) {
      ++it;
      continue;
    }
    std::vector<void*>& blocks = it->second;
    while (!blocks.empty()) {
      CUDA_RETURN_IF_ERROR(cudaFree(blocks.back()));
      stats_.bytes_cached -= static_cast<int64_t>(it->first.second);
      blocks.pop_back();
    }
    it = free_.erase(it);
  }
  return absl::OkStatus();
}

DeviceAllocator::Stats DeviceAllocator::GetStats() const {
  MutexLock lock(&mu_);
  return stats_;
}

}  // namespace sluice::train::backend::cuda
