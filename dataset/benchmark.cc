#include "dataset/benchmark.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "core/status_macros.h"
#include "dataset/iterator.h"

namespace sluice {
namespace {

int64_t DefaultCountExamples(const Element& element) {
  if (element.empty() || element[0].rank() == 0) return 1;
  return element[0].dim(0);
}

int64_t PeakRssBytes() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB.
}

}  // namespace

absl::StatusOr<BenchmarkResult> RunBenchmark(const Dataset& dataset,
                                             const BenchmarkOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto& count = options.count_examples ? options.count_examples : DefaultCountExamples;
  BenchmarkResult result;
  std::unique_ptr<Iterator> iterator = dataset.MakeIterator();
  if (options.on_start) SLUICE_RETURN_IF_ERROR(options.on_start(*iterator));
  const Clock::time_point start = Clock::now();
  Clock::time_point next_progress = start;
  Clock::time_point next_check = start;
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  auto after = [](double seconds) {
    return Clock::now() +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  };
  while (true) {
    absl::StatusOr<std::optional<Element>> next = iterator->GetNext();
    if (!next.ok()) return next.status();
    if (!next->has_value()) break;
    ++result.elements;
    result.examples += count(**next);
    if (options.progress && Clock::now() >= next_progress) {
      options.progress({elapsed(), result.elements, result.examples});
      next_progress = after(options.progress_interval_seconds);
    }
    if (options.check && Clock::now() >= next_check) {
      SLUICE_RETURN_IF_ERROR(options.check());
      next_check = after(options.check_interval_seconds);
    }
    if (options.max_seconds > 0 && elapsed() >= options.max_seconds) break;
  }
  result.seconds = elapsed();
  result.examples_per_second = result.seconds > 0 ? result.examples / result.seconds : 0;
  const double wall_ns = std::max(result.seconds * 1e9, 1.0);
  double highest = -1;
  for (NodeStatsSnapshot& stats : iterator->Stats()) {
    const double parallelism = static_cast<double>(std::max<int64_t>(stats.parallelism, 1));
    BenchmarkStage stage{std::move(stats), 0};
    stage.utilization = static_cast<double>(stage.stats.busy_ns) / (wall_ns * parallelism);
    if (stage.utilization > highest) {
      highest = stage.utilization;
      result.bottleneck = stage.stats.name;
    }
    result.stages.push_back(std::move(stage));
  }
  if (options.progress) options.progress({result.seconds, result.elements, result.examples});
  iterator.reset();  // Joins the pipeline's threads before measuring memory.
  result.peak_rss_bytes = PeakRssBytes();
  return result;
}

}  // namespace sluice
