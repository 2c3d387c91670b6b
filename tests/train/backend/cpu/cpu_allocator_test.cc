#include "train/backend/cpu/cpu_allocator.h"

#include <gtest/gtest.h>

namespace sluice::train::backend::cpu {
namespace {

TEST(CpuAllocatorTest, ReusesFreedLargeBlocks) {
  const void* first;
  {
    Tensor t = CpuAllocator::Allocate(DType::kFloat32, Shape{512, 1024});
    EXPECT_EQ(t.shape(), Shape({512, 1024}));
    EXPECT_TRUE(t.device().is_cpu());
    t.data<float>()[512 * 1024 - 1] = 1.0f;  // the whole block is usable
    first = t.raw_data();
  }
  EXPECT_GE(CpuAllocator::cached_bytes(), size_t{512 * 1024 * 4});
  const int64_t reuses = CpuAllocator::reuses();
  Tensor again = CpuAllocator::Allocate(DType::kFloat32, Shape{1024, 512});  // same size
  EXPECT_EQ(again.raw_data(), first);
  EXPECT_EQ(CpuAllocator::reuses(), reuses + 1);
  // A block in use is never handed out twice.
  Tensor other = CpuAllocator::Allocate(DType::kFloat32, Shape{1024, 512});
  EXPECT_NE(other.raw_data(), again.raw_data());
}

TEST(CpuAllocatorTest, SmallTensorsBypassTheCache) {
  const int64_t reuses = CpuAllocator::reuses();
  for (int i = 0; i < 3; ++i) {
    Tensor t = CpuAllocator::Allocate(DType::kFloat32, Shape{16});
    EXPECT_EQ(t.num_elements(), 16);
  }
  EXPECT_EQ(CpuAllocator::reuses(), reuses);
}

}  // namespace
}  // namespace sluice::train::backend::cpu
