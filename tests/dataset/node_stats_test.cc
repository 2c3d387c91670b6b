#include "dataset/node_stats.h"

#include "gtest/gtest.h"

namespace sluice {
namespace {

constexpr double kMiB = 1 << 20;

TEST(MapWindowTest, TwiceTheParallelismUntilTheResultsSizeIsKnown) {
  EXPECT_EQ(MapWindow(2, kMinOrderedWindow, 0), 4);
  EXPECT_EQ(MapWindow(3, 0, 8), 6);  // out of order: never widened
  EXPECT_EQ(MapWindow(0, 0, 8), 2);  // parallelism is at least 1
}

TEST(MapWindowTest, OrderedWindowWidensToTheMinimumWithinTheBytes) {
  EXPECT_EQ(MapWindow(2, kMinOrderedWindow, 588 * 1024), kMinOrderedWindow);  // 224x224 floats
  EXPECT_EQ(MapWindow(1, kMinOrderedWindow, 8), kMinOrderedWindow);
  // 8 MiB results: 16 MiB of extra room is 2 results beyond 2 x parallelism.
  EXPECT_EQ(MapWindow(2, kMinOrderedWindow, 8 * kMiB), 6);
  // 37 MiB batches: none.
  EXPECT_EQ(MapWindow(2, kMinOrderedWindow, 37 * kMiB), 4);
  // Wide enough already.
  EXPECT_EQ(MapWindow(8, kMinOrderedWindow, 8), 16);
  EXPECT_EQ(MapWindow(12, kMinOrderedWindow, 8), 24);
}

}  // namespace
}  // namespace sluice
