#include "train/backend/cpu/dnnl_primitive_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "train/backend/cpu/cpu_threads.h"

namespace sluice::train::backend::cpu {
namespace {

TEST(DnnlPrimitiveCacheTest, BuildsOncePerKey) {
  DnnlPrimitiveCache cache;
  int built = 0;
  auto make = [&] {
    ++built;
    return std::make_shared<int>(built);
  };
  EXPECT_EQ(*cache.GetOrCreate<int>("a", make), 1);
  EXPECT_EQ(*cache.GetOrCreate<int>("a", make), 1);
  EXPECT_EQ(*cache.GetOrCreate<int>("b", make), 2);
  EXPECT_EQ(built, 2);
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.misses(), 2);
  EXPECT_EQ(cache.size(), 2u);
}

// oneDNN fixes the OpenMP team size in a primitive: a key made under another team size (after
// SetCpuThreads, or inside OneOpenMpThread) is another entry. It was the same: the first team's
// primitive ran under the new setting.
TEST(DnnlPrimitiveCacheTest, ATeamSizeIsAKeyOfItsOwn) {
  DnnlPrimitiveCache cache;
  int built = 0;
  auto make = [&] { return std::make_shared<int>(++built); };
  SetCpuThreads(2);
  ApplyCpuThreadsToOpenMp();
  EXPECT_EQ(*cache.GetOrCreate<int>("conv", make), 1);
  {
    OneOpenMpThread single;
    EXPECT_EQ(*cache.GetOrCreate<int>("conv", make), 2);
    EXPECT_EQ(*cache.GetOrCreate<int>("conv", make), 2);
  }
  EXPECT_EQ(*cache.GetOrCreate<int>("conv", make), 1);
  SetCpuThreads(0);
  ApplyCpuThreadsToOpenMp();
}

TEST(DnnlPrimitiveCacheTest, EvictsTheLeastRecentlyUsed) {
  DnnlPrimitiveCache cache(2);
  int built = 0;
  auto make = [&] { return std::make_shared<int>(++built); };
  cache.GetOrCreate<int>("a", make);
  cache.GetOrCreate<int>("b", make);
  cache.GetOrCreate<int>("a", make);  // a is now the most recent
  cache.GetOrCreate<int>("c", make);  // evicts b
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(*cache.GetOrCreate<int>("a", make), 1);
  EXPECT_EQ(built, 3);
  EXPECT_EQ(*cache.GetOrCreate<int>("b", make), 4);  // rebuilt
}

TEST(DnnlPrimitiveCacheTest, ConcurrentCallersShareOneEntry) {
  DnnlPrimitiveCache cache;
  std::atomic<int> built{0};
  std::vector<std::shared_ptr<const int>> seen(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        seen[t] = cache.GetOrCreate<int>("k", [&] { return std::make_shared<int>(++built); });
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Racing misses may build more than once, but everyone ends with the kept one.
  for (const auto& p : seen) EXPECT_EQ(p.get(), seen[0].get());
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_GE(built.load(), 1);
}

}  // namespace
}  // namespace sluice::train::backend::cpu
