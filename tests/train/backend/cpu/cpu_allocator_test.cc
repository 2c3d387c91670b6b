#include "train/backend/cpu/cpu_allocator.h"

#include <gtest/gtest.h>

#include <vector>

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

// Small tensors are never cached, but they count in the live bytes while they live.
TEST(CpuAllocatorTest, SmallTensorsBypassTheCacheButCount) {
  const int64_t reuses = CpuAllocator::reuses();
  const size_t cached = CpuAllocator::cached_bytes();
  const size_t live = CpuAllocator::live_bytes();
  for (int i = 0; i < 3; ++i) {
    Tensor t = CpuAllocator::Allocate(DType::kFloat32, Shape{100});
    EXPECT_EQ(t.num_elements(), 100);
    EXPECT_EQ(CpuAllocator::live_bytes(), live + 448);  // 400 bytes in 64-byte lines
  }
  EXPECT_EQ(CpuAllocator::reuses(), reuses);
  EXPECT_EQ(CpuAllocator::cached_bytes(), cached);
  EXPECT_EQ(CpuAllocator::live_bytes(), live);
}

// A training step's working set stays cached however large it is (an imported ResNet-18 at
// 224x224 needs gigabytes; a fixed 512 MiB limit sent most of it back to mmap every step), and a
// new size evicts stale ones instead of being refused. Blocks are never touched here, so the
// gigabytes are address space, not memory.
TEST(CpuAllocatorTest, KeepsTheWorkingSetAndEvictsStaleSizes) {
  constexpr int64_t kBig = 96 << 20;  // floats: 384 MiB blocks, larger than any other test's
  const size_t big_bytes = kBig * 4;
  {
    std::vector<Tensor> step;
    for (int i = 0; i < 3; ++i)
      step.push_back(CpuAllocator::Allocate(DType::kFloat32, Shape{kBig}));
    EXPECT_GE(CpuAllocator::idle_limit_bytes(), 3 * big_bytes);
  }
  const size_t limit = CpuAllocator::idle_limit_bytes();
  EXPECT_GE(limit, 3 * big_bytes);
  EXPECT_LE(CpuAllocator::cached_bytes(), limit);
  // All three stayed idle, past the old 512 MiB limit: the next step reuses every one.
  EXPECT_GE(CpuAllocator::cached_bytes(), 3 * big_bytes);
  int64_t reuses = CpuAllocator::reuses();
  {
    std::vector<Tensor> step;
    for (int i = 0; i < 3; ++i)
      step.push_back(CpuAllocator::Allocate(DType::kFloat32, Shape{kBig}));
  }
  EXPECT_EQ(CpuAllocator::reuses(), reuses + 3);
  // A new size at the limit evicts idle blocks of the stale one and is kept.
  const size_t filler = limit - CpuAllocator::cached_bytes();
  const int64_t other = kBig / 2 + 1024;
  const void* kept;
  {
    Tensor fill;
    if (filler >= CpuAllocator::kMinCachedBytes) {
      fill = CpuAllocator::Allocate(DType::kUint8, Shape{static_cast<int64_t>(filler)});
    }
    Tensor t = CpuAllocator::Allocate(DType::kFloat32, Shape{other});
    kept = t.raw_data();
  }
  EXPECT_LE(CpuAllocator::cached_bytes(), CpuAllocator::idle_limit_bytes());
  reuses = CpuAllocator::reuses();
  Tensor again = CpuAllocator::Allocate(DType::kFloat32, Shape{other});
  EXPECT_EQ(again.raw_data(), kept);
  EXPECT_EQ(CpuAllocator::reuses(), reuses + 1);
}

}  // namespace
}  // namespace sluice::train::backend::cpu
