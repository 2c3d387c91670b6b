// Iterators start AUTOTUNE themselves (autotune/iterator_autotune.cc).
#include <chrono>
#include <memory>
#include <thread>

#include "autotune/controller.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

Dataset Pipeline(Options options, int parallelism = kAutotune) {
  return Dataset::Range(1'000'000)
      .Map(
          [](Element e) -> absl::StatusOr<Element> {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
            return e;
          },
          {.num_parallel_calls = parallelism})
      .Prefetch(parallelism == kAutotune ? kAutotune : 2)
      .WithOptions(options);
}

TEST(IteratorAutotuneTest, StartsWithTheNodesAndStopsWithTheIterator) {
  Options options;
  options.threads = 2;
  auto it = Pipeline(options).MakeIterator();
  // No nodes yet, so nothing to tune.
  EXPECT_EQ(it->tuner(), nullptr);
  EXPECT_EQ(it->AutotuneReport().status().code(), absl::StatusCode::kFailedPrecondition);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(it->GetNext().ok());
  ASSERT_NE(it->tuner(), nullptr);
  ASSERT_NE(dynamic_cast<AutotuneController*>(it->tuner()), nullptr);
  // Its thread steps on its own: the count rises while we only pull.
  const int64_t first = it->AutotuneReport()->steps;
  EXPECT_GE(first, 1);
  const auto start = steady_clock::now();
  while (it->AutotuneReport()->steps == first && steady_clock::now() - start < milliseconds(3000)) {
    ASSERT_TRUE(it->GetNext().ok());
  }
  absl::StatusOr<AutotuneReport> r = it->AutotuneReport();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->steps, first);
  EXPECT_EQ(r->cpu_budget, 2);
  ASSERT_EQ(r->stages.size(), 4u);
  EXPECT_EQ(r->stages[1].name, "Map[1]");

  // The controller holds the stats registry: once the registry is gone, so
  // is the controller (its destructor joins its thread). Map calls still in
  // flight when the iterator goes hold it a moment longer.
  std::weak_ptr<StatsRegistry> registry = it->stats_registry();
  const auto destroy = steady_clock::now();
  it.reset();
  EXPECT_LT(steady_clock::now() - destroy, milliseconds(500));
  while (!registry.expired() && steady_clock::now() - destroy < milliseconds(2000)) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_TRUE(registry.expired());
}

TEST(IteratorAutotuneTest, OptionsCanDisableIt) {
  Options options;
  options.threads = 2;
  options.autotune = false;
  auto it = Pipeline(options).MakeIterator();
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(it->GetNext().ok());
  EXPECT_EQ(it->tuner(), nullptr);
  EXPECT_EQ(it->AutotuneReport().status().code(), absl::StatusCode::kFailedPrecondition);
  // The knobs keep their starting values.
  for (const NodeStatsSnapshot& s : it->Stats()) {
    if (s.name == "Map[1]") {
      EXPECT_EQ(s.parallelism, 2);
    }
    if (s.name == "Prefetch[2]") {
      EXPECT_EQ(s.buffer_size, 2);
    }
  }
  // An outer WithOptions that sets it again wins.
  Options on;
  on.autotune = true;
  auto again = Pipeline(options).WithOptions(on).MakeIterator();
  ASSERT_TRUE(again->Initialize().ok());
  EXPECT_NE(again->tuner(), nullptr);
}

TEST(IteratorAutotuneTest, NotStartedWithoutAutotuneKnobs) {
  Options options;
  options.threads = 2;
  auto it = Pipeline(options, /*parallelism=*/2).MakeIterator();
  ASSERT_TRUE(it->Initialize().ok());
  EXPECT_EQ(it->tuner(), nullptr);
}

TEST(IteratorAutotuneTest, HeaderRegistersTheFactory) {
  EXPECT_TRUE(kAutotuneRegistered);
  EXPECT_NE(GetIteratorTunerFactory(), nullptr);
}

}  // namespace
}  // namespace sluice
