#ifndef SLUICE_TRAIN_BACKEND_CUDA_CUDA_CHECK_H_
#define SLUICE_TRAIN_BACKEND_CUDA_CUDA_CHECK_H_

// Turns the status codes of the CUDA runtime, cuBLAS and cuDNN into
// absl::Status, naming the call and where it was made, e.g.
//   "cudaMalloc(&p, bytes) failed at train/backend/cuda/device_allocator.cc:42:
//    cudaErrorMemoryAllocation (out of memory)".

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace sluice::train::backend::cuda {

inline absl::Status CudaStatus(cudaError_t err, absl::string_view call, absl::string_view file,
                               int line) {
  if (err == cudaSuccess) return absl::OkStatus();
  const absl::StatusCode code = err == cudaErrorMemoryAllocation
                                    ? absl::StatusCode::kResourceExhausted
                                    : absl::StatusCode::kInternal;
  return absl::Status(
      code, absl::StrCat(call, " failed at ", file, ":", line, ": ", cudaGetErrorName(err), " (",
                         cudaGetErrorString(err), ")"));
}

inline absl::Status CublasStatus(cublasStatus_t err, absl::string_view call, absl::string_view file,
                                 int line) {
  if (err == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const absl::StatusCode code = err == CUBLAS_STATUS_ALLOC_FAILED
                                    ? absl::StatusCode::kResourceExhausted
                                    : absl::StatusCode::kInternal;
  return absl::Status(
      code, absl::StrCat(call, " failed at ", file, ":", line, ": ", cublasGetStatusName(err), " (",
                         cublasGetStatusString(err), ")"));
}

inline absl::Status CudnnStatus(cudnnStatus_t err, absl::string_view call, absl::string_view file,
                                int line) {
  if (err == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  const absl::StatusCode code = err == CUDNN_STATUS_ALLOC_FAILED
                                    ? absl::StatusCode::kResourceExhausted
                                    : absl::StatusCode::kInternal;
  return absl::Status(
      code, absl::StrCat(call, " failed at ", file, ":", line, ": ", cudnnGetErrorString(err)));
}

}  // namespace sluice::train::backend::cuda

// Each evaluates `expr` once and returns its error as an absl::Status from the
// enclosing function.
#define CUDA_RETURN_IF_ERROR(expr)                                                     \
  do {                                                                                 \
    ::absl::Status sluice_cuda_status_ =                                               \
        ::sluice::train::backend::cuda::CudaStatus((expr), #expr, __FILE__, __LINE__); \
    if (!sluice_cuda_status_.ok()) return sluice_cuda_status_;                         \
  } while (0)

#define CUBLAS_RETURN_IF_ERROR(expr)                                                     \
  do {                                                                                   \
    ::absl::Status sluice_cublas_status_ =                                               \
        ::sluice::train::backend::cuda::CublasStatus((expr), #expr, __FILE__, __LINE__); \
    if (!sluice_cublas_status_.ok()) return sluice_cublas_status_;                       \
  } while (0)

#define CUDNN_RETURN_IF_ERROR(expr)                                                     \
  do {                                                                                  \
    ::absl::Status sluice_cudnn_status_ =                                               \
        ::sluice::train::backend::cuda::CudnnStatus((expr), #expr, __FILE__, __LINE__); \
    if (!sluice_cudnn_status_.ok()) return sluice_cudnn_status_;                        \
  } while (0)

#endif  // SLUICE_TRAIN_BACKEND_CUDA_CUDA_CHECK_H_
