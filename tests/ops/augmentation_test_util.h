#ifndef SLUICE_TESTS_OPS_AUGMENTATION_TEST_UTIL_H_
#define SLUICE_TESTS_OPS_AUGMENTATION_TEST_UTIL_H_

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "gtest/gtest.h"

namespace sluice::testing {

// A float32 tensor of `shape` holding `values` (row-major).
inline Tensor Floats(const std::vector<float>& values, Shape shape) {
  auto t = Tensor::FromVector<float>(values, std::move(shape));
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

// A float32 [batch, height, width, 1] batch whose value at (b, y, x) is 100 b + 10 y + x: every
// pixel says where it came from.
inline Tensor Positions(int64_t batch, int64_t height, int64_t width) {
  Tensor t(DType::kFloat32, Shape{batch, height, width, 1});
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t y = 0; y < height; ++y) {
      for (int64_t x = 0; x < width; ++x) {
        t.data<float>()[(b * height + y) * width + x] = static_cast<float>(100 * b + 10 * y + x);
      }
    }
  }
  return t;
}

inline std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.flat<float>().begin(), t.flat<float>().end());
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_OPS_AUGMENTATION_TEST_UTIL_H_
