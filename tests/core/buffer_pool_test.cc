#include "core/buffer_pool.h"

#include <cstdint>
#include <cstring>
#include <memory>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(BufferPoolTest, ReusesTheMemoryOfDroppedBuffersOfTheSameSize) {
  auto pool = BufferPool::Create(2);
  auto a = pool->Get(1000);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->size(), 1000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data()) % Buffer::kAlignment, 0u);
  std::memset(a->data(), 7, a->size());  // Writable (ASan checks the extent).
  void* memory = a->data();
  a.reset();
  EXPECT_EQ(pool->free_blocks(), 1u);
  auto other_size = pool->Get(5000);
  EXPECT_NE(other_size->data(), memory);
  auto b = pool->Get(1000);
  EXPECT_EQ(b->data(), memory);
  EXPECT_EQ(pool->free_blocks(), 0u);
}

TEST(BufferPoolTest, KeepsAtMostMaxFreeBlocks) {
  auto pool = BufferPool::Create(2);
  auto a = pool->Get(64), b = pool->Get(64), c = pool->Get(64);
  a.reset();
  b.reset();
  c.reset();
  EXPECT_EQ(pool->free_blocks(), 2u);
}

TEST(BufferPoolTest, BuffersOutliveThePool) {
  auto pool = BufferPool::Create(2);
  auto a = pool->Get(256);
  auto kept = pool->Get(256);
  kept.reset();
  pool.reset();  // Frees its free block; `a` frees its own memory (ASan checks both).
  std::memset(a->data(), 1, a->size());
  a.reset();
}

}  // namespace
}  // namespace sluice
