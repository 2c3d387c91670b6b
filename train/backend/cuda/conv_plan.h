#ifndef SLUICE_TRAIN_BACKEND_CUDA_CONV_PLAN_H_
#define SLUICE_TRAIN_BACKEND_CUDA_CONV_PLAN_H_

#include <cudnn.h>

#include <cstddef>
#include <cstdint>

namespace sluice::train::backend::cuda {

// What CudaBackend keeps per convolution geometry and direction: the cuDNN
// descriptors, the algorithm chosen once and its workspace size. Owns the
// descriptors.
struct ConvPlan {
  ConvPlan() = default;
  ConvPlan(const ConvPlan&) = delete;
  ConvPlan& operator=(const ConvPlan&) = delete;
  ~ConvPlan() {
    if (x_desc != nullptr) cudnnDestroyTensorDescriptor(x_desc);
    if (y_desc != nullptr) cudnnDestroyTensorDescriptor(y_desc);
    if (w_desc != nullptr) cudnnDestroyFilterDescriptor(w_desc);
    if (conv_desc != nullptr) cudnnDestroyConvolutionDescriptor(conv_desc);
  }

  cudnnTensorDescriptor_t x_desc = nullptr;  // the (padded) input, NHWC
  cudnnTensorDescriptor_t y_desc = nullptr;  // NHWC
  cudnnFilterDescriptor_t w_desc = nullptr;  // OHWI
  cudnnConvolutionDescriptor_t conv_desc = nullptr;
  // 16-bit data (float16 or bfloat16, under the mixed policies), multiplied on the tensor cores
  // and summed in float32; else float32.
  bool half = false;
  int algorithm = 0;  // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  size_t workspace_bytes = 0;
  // Zeros added explicitly on each side beyond cuDNN's symmetric padding.
  int64_t extra_top = 0, extra_bottom = 0, extra_left = 0, extra_right = 0;
};

}  // namespace sluice::train::backend::cuda

#endif  // SLUICE_TRAIN_BACKEND_CUDA_CONV_PLAN_H_
