#ifndef SLUICE_CORE_HOST_DEVICE_H_
#define SLUICE_CORE_HOST_DEVICE_H_

// Marks a function that the CPU code and the CUDA kernels share: nvcc compiles it for both, every
// other compiler sees a plain inline function.
#if defined(__CUDACC__)
#define SLUICE_HOST_DEVICE __host__ __device__
#else
#define SLUICE_HOST_DEVICE
#endif

#endif  // SLUICE_CORE_HOST_DEVICE_H_
