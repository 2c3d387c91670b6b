#ifndef SLUICE_TRAIN_BACKEND_CUDA_DEVICE_SCOPE_H_
#define SLUICE_TRAIN_BACKEND_CUDA_DEVICE_SCOPE_H_

#include <cuda_runtime.h>

namespace sluice::train::backend::cuda {

// Makes `device` current for the scope and restores the caller's device: for calls that may run
// on another library's threads (the caching allocator's frees, DLPack's exchange with PyTorch),
// whose current device is theirs.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) status_ = cudaSetDevice(device);
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  cudaError_t status() const { return status_; }

 private:
  int previous_ = -1;
  cudaError_t status_ = cudaSuccess;
};

}  // namespace sluice::train::backend::cuda

#endif  // SLUICE_TRAIN_BACKEND_CUDA_DEVICE_SCOPE_H_
