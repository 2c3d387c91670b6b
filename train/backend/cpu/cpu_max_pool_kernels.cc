#include "train/backend/cpu/cpu_max_pool_kernels.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "train/backend/cpu/cpu_kernel_util.h"
#include "train/backend/cpu/cpu_threads.h"

namespace sluice::train::backend::cpu {
namespace {

// r = the larger of r and v, a NaN in r staying and one in v taken (the first NaN wins), and
// at = k where v was taken. Compares, two NaN tests and blends: it vectorizes.
SLUICE_KERNEL_CLONES void TakeMax(float* __restrict r, uint16_t* __restrict at,
                                  const float* __restrict v, uint16_t k, int64_t c) {
  for (int64_t i = 0; i < c; ++i) {
    const bool take = v[i] > r[i] || (v[i] != v[i] && r[i] == r[i]);
    r[i] = take ? v[i] : r[i];
    at[i] = take ? k : at[i];
  }
}

// g = the gradient where window position k was the maximum, else 0: windows that tile the image
// write each input position once, with no zeroing before.
SLUICE_KERNEL_CLONES void SetWhereMax(float* __restrict g, const float* __restrict grad_y,
                                      const uint16_t* __restrict at, uint16_t k, int64_t c) {
  for (int64_t i = 0; i < c; ++i) g[i] = at[i] == k ? grad_y[i] : 0.0f;
}

// The same, added: windows that overlap, or leave gaps, over a zeroed gradient.
SLUICE_KERNEL_CLONES void AddWhereMax(float* __restrict g, const float* __restrict grad_y,
                                      const uint16_t* __restrict at, uint16_t k, int64_t c) {
  for (int64_t i = 0; i < c; ++i) g[i] += at[i] == k ? grad_y[i] : 0.0f;
}

bool WindowsTile(const PoolGeometry& g) {
  return g.stride_h == g.window_h && g.stride_w == g.window_w && g.pad_top == 0 &&
         g.pad_left == 0 && g.oh * g.window_h == g.h && g.ow * g.window_w == g.w;
}

// The part of output (i, j)'s window inside the image: rows [h0, h1), columns [w0, w1). Its
// positions, row-major, are below kMaxPoolWindowLimit (the backend checks).
struct Window {
  int64_t h0, h1, w0, w1;
  uint16_t Position(int64_t h, int64_t w) const {
    return static_cast<uint16_t>((h - h0) * (w1 - w0) + (w - w0));
  }
};
Window WindowOf(const PoolGeometry& g, int64_t i, int64_t j) {
  const int64_t top = i * g.stride_h - g.pad_top, left = j * g.stride_w - g.pad_left;
  return {.h0 = std::max<int64_t>(top, 0),
          .h1 = std::min(top + g.window_h, g.h),
          .w0 = std::max<int64_t>(left, 0),
          .w1 = std::min(left + g.window_w, g.w)};
}

// Output rows (image, i) a parallel chunk should hold: about kGrain input elements read.
int64_t RowGrain(const PoolGeometry& g) {
  return std::max<int64_t>(1, kGrain / std::max<int64_t>(1, g.ow * g.window_h * g.window_w * g.c));
}

}  // namespace

void MaxPoolForwardF32(const PoolGeometry& g, const float* x, float* y, uint16_t* argmax) {
  ParallelFor(g.n * g.oh, RowGrain(g), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / g.oh, i = row % g.oh;
      for (int64_t j = 0; j < g.ow; ++j) {
        const int64_t o = (row * g.ow + j) * g.c;
        const Window win = WindowOf(g, i, j);
        // A window of -inf alone takes none: its first position is the maximum.
        std::fill(y + o, y + o + g.c, -std::numeric_limits<float>::infinity());
        std::fill(argmax + o, argmax + o + g.c, 0);
        for (int64_t h = win.h0; h < win.h1; ++h) {
          for (int64_t w = win.w0; w < win.w1; ++w) {
            TakeMax(y + o, argmax + o, x + ((n * g.h + h) * g.w + w) * g.c, win.Position(h, w),
                    g.c);
          }
        }
      }
    }
  });
}

void MaxPoolBackwardF32(const PoolGeometry& g, const uint16_t* argmax, const float* grad_y,
                        float* grad_x) {
  // A chunk is whole images: windows that overlap share input rows, and each image's gradient is
  // zeroed (where windows do not tile it) by the thread that fills it.
  const int64_t image = g.h * g.w * g.c;
  const bool tile = WindowsTile(g);
  const int64_t grain = std::max<int64_t>(1, RowGrain(g) / std::max<int64_t>(1, g.oh));
  ParallelFor(g.n, grain, [&](int64_t begin, int64_t end) {
    if (!tile) std::memset(grad_x + begin * image, 0, sizeof(float) * (end - begin) * image);
    for (int64_t row = begin * g.oh; row < end * g.oh; ++row) {
      const int64_t n = row / g.oh, i = row % g.oh;
      for (int64_t j = 0; j < g.ow; ++j) {
        const int64_t o = (row * g.ow + j) * g.c;
        const Window win = WindowOf(g, i, j);
        for (int64_t h = win.h0; h < win.h1; ++h) {
          for (int64_t w = win.w0; w < win.w1; ++w) {
            float* at = grad_x + ((n * g.h + h) * g.w + w) * g.c;
            const uint16_t k = win.Position(h, w);
            if (tile) {
              SetWhereMax(at, grad_y + o, argmax + o, k, g.c);
            } else {
              AddWhereMax(at, grad_y + o, argmax + o, k, g.c);
            }
          }
        }
      }
    }
  });
}

}  // namespace sluice::train::backend::cpu
