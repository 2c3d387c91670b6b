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

TEST(BufferPoolTest, ReusesTheSmallestBlockWithAtMostAQuarterToSpare) {
  auto pool = BufferPool::Create(4);
  auto big = pool->Get(1280), fits = pool->Get(1088), small = pool->Get(512);
  void* fits_memory = fits->data();
  void* big_memory = big->data();
  big.reset();
  fits.reset();
  small.reset();
  auto c = pool->Get(1024);  // 1088 and 1280 hold it; 1088 is the tighter fit
  EXPECT_EQ(c->data(), fits_memory);
  EXPECT_EQ(c->size(), 1024u);
  std::memset(c->data(), 3, c->size());
  auto d = pool->Get(1024);  // 1280 is a quarter more than 1024: still taken
  EXPECT_EQ(d->data(), big_memory);
  auto e = pool->Get(256);  // 512 is twice as large: a new block
  EXPECT_EQ(pool->free_blocks(), 1u);
  c.reset();  // returns as the 1088-byte block it is
  auto f = pool->Get(1088);
  EXPECT_EQ(f->data(), fits_memory);
}

TEST(BufferPoolTest, KeepsAtMostMaxFreeBytes) {
  auto pool = BufferPool::Create(8, 1000);
  auto a = pool->Get(512), b = pool->Get(512), c = pool->Get(384);
  a.reset();
  b.reset();  // 1024 bytes would pass the bound
  EXPECT_EQ(pool->free_blocks(), 1u);
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
