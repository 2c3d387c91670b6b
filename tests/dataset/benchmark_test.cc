#include "dataset/benchmark.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(BenchmarkTest, CountsBatchesAndExamplesToTheEnd) {
  absl::StatusOr<BenchmarkResult> result = RunBenchmark(Dataset::Range(10).Batch(3));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->elements, 4);   // 3 + 3 + 3 + 1
  EXPECT_EQ(result->examples, 10);  // The first dimension of each batch.
  EXPECT_GT(result->seconds, 0);
  EXPECT_NEAR(result->examples_per_second, 10 / result->seconds, 1e-6 * 10 / result->seconds);
  ASSERT_EQ(result->stages.size(), 2u);
  EXPECT_EQ(result->stages[0].stats.name, "Range[0]");
  EXPECT_EQ(result->stages[1].stats.name, "Batch[1]");
  EXPECT_EQ(result->stages[0].stats.elements_produced, 10);
  EXPECT_EQ(result->stages[1].stats.elements_produced, 4);
  EXPECT_GT(result->peak_rss_bytes, 0);
}

TEST(BenchmarkTest, BottleneckIsTheMostUtilizedStage) {
  // The Map sleeps 2 ms per element: it dominates Range and Batch.
  Dataset dataset = Dataset::Range(20)
                        .Map([](Element e) -> absl::StatusOr<Element> {
                          std::this_thread::sleep_for(std::chrono::milliseconds(2));
                          return e;
                        })
                        .Batch(5);
  absl::StatusOr<BenchmarkResult> result = RunBenchmark(dataset);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->bottleneck, "Map[1]");
  double highest = 0;
  for (const BenchmarkStage& stage : result->stages) highest = std::max(highest, stage.utilization);
  EXPECT_EQ(result->stages[1].utilization, highest);
  EXPECT_GT(result->stages[1].utilization, 0.5);  // ~40 ms busy of ~40 ms wall.
  EXPECT_LE(result->stages[1].utilization, 1.05);
}

TEST(BenchmarkTest, StopsAfterMaxSecondsOnAnInfiniteDataset) {
  Dataset dataset = Dataset::Range(1).Repeat().Map([](Element e) -> absl::StatusOr<Element> {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return e;
  });
  std::vector<BenchmarkProgress> progress;
  BenchmarkOptions options;
  options.max_seconds = 0.2;
  options.progress = [&](const BenchmarkProgress& p) { progress.push_back(p); };
  options.progress_interval_seconds = 0.05;
  options.count_examples = [](const Element&) { return int64_t{2}; };
  absl::StatusOr<BenchmarkResult> result = RunBenchmark(dataset, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GE(result->seconds, 0.2);
  EXPECT_LT(result->seconds, 5);
  EXPECT_GT(result->elements, 10);
  EXPECT_EQ(result->examples, 2 * result->elements);
  ASSERT_GE(progress.size(), 2u);  // Periodic calls and the final one.
  EXPECT_EQ(progress.back().examples, result->examples);
}

// Python's Ctrl-C: the check's error ends a run that would never end, and is what it returns.
TEST(BenchmarkTest, ACheckThatFailsStopsARunToTheEnd) {
  int calls = 0;
  BenchmarkOptions options;  // max_seconds 0: to the end, which an infinite dataset never has
  options.check_interval_seconds = 0;
  options.check = [&]() -> absl::Status {
    return ++calls == 3 ? absl::CancelledError("interrupted") : absl::OkStatus();
  };
  absl::StatusOr<BenchmarkResult> result = RunBenchmark(Dataset::Range(1).Repeat(), options);
  EXPECT_EQ(result.status(), absl::CancelledError("interrupted"));
  EXPECT_EQ(calls, 3);
}

TEST(BenchmarkTest, ElementErrorsAreReturned) {
  Dataset dataset = Dataset::Range(5).Map([](Element e) -> absl::StatusOr<Element> {
    if (e[0].scalar<int64_t>() == 3) return absl::InvalidArgumentError("bad element");
    return e;
  });
  absl::StatusOr<BenchmarkResult> result = RunBenchmark(dataset);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("bad element"), std::string::npos) << result.status();
}

}  // namespace
}  // namespace sluice
