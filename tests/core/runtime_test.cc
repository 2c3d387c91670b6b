#include "core/runtime.h"

#include <future>
#include <memory>
#include <utility>

#include "gtest/gtest.h"

namespace sluice {
namespace {

// An iterator that waits for its tasks in its destructor (Batch) must not do so on a worker of
// its own arena: OnWorker tells the two apart, per arena.
TEST(RuntimeTest, OnWorkerIsTrueOnlyInsideTheArenasOwnTasks) {
  Runtime a(1);
  Runtime b(1);
  EXPECT_FALSE(a.OnWorker());
  auto seen = std::make_shared<std::promise<std::pair<bool, bool>>>();
  std::future<std::pair<bool, bool>> result = seen->get_future();
  a.Schedule([seen, &a, &b] { seen->set_value({a.OnWorker(), b.OnWorker()}); });
  const auto [on_a, on_b] = result.get();
  EXPECT_TRUE(on_a);
  EXPECT_FALSE(on_b);
  EXPECT_FALSE(a.OnWorker());
}

}  // namespace
}  // namespace sluice
