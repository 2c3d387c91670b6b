#ifndef SLUICE_TRAIN_LAYERS_WINDOW_SIZE_H_
#define SLUICE_TRAIN_LAYERS_WINDOW_SIZE_H_

#include <cstdint>
#include <optional>

#include "train/ops/padding.h"
#include "train/ops/pool.h"

namespace sluice::train::layers {

// Keras' kernel_size, pool_size and strides: one number for a square window, or
// {height, width}.
struct KernelSize {
  KernelSize(int64_t size) : h(size), w(size) {}  // NOLINT: Conv2D(32, 3) as in Keras
  KernelSize(int64_t height, int64_t width) : h(height), w(width) {}
  int64_t h, w;
};
using PoolSize = KernelSize;

// Keras' pooling arguments as the pooling op takes them: `strides` unset strides by the window,
// as Keras' strides=None.
inline ops::Pool2DOptions PoolOptions(PoolSize pool_size, std::optional<PoolSize> strides,
                                      ops::Padding padding) {
  const PoolSize s = strides.value_or(pool_size);
  return {.window_h = pool_size.h,
          .window_w = pool_size.w,
          .stride_h = s.h,
          .stride_w = s.w,
          .padding = padding};
}

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_WINDOW_SIZE_H_
