#ifndef SLUICE_DATASET_BENCHMARK_H_
#define SLUICE_DATASET_BENCHMARK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/element.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "dataset/node_stats.h"

namespace sluice {

// What a benchmark has done so far, for a progress display.
struct BenchmarkProgress {
  double seconds = 0;
  int64_t elements = 0;  // elements the pipeline yielded (batches)
  int64_t examples = 0;  // examples in them (images)
};

struct BenchmarkOptions {
  // Stop after this long; 0 runs to the end of the dataset.
  double max_seconds = 0;
  // Examples in one yielded element; default: component 0's first dimension
  // (a batch), or 1 for a scalar first component.
  std::function<int64_t(const Element&)> count_examples;
  // Called about every progress_interval_seconds while running.
  std::function<void(const BenchmarkProgress&)> progress;
  double progress_interval_seconds = 0.5;
  // Called with the iterator before the first element is pulled (the clock
  // starts after it), e.g. to start an AutotuneController on it.
  std::function<absl::Status(Iterator&)> on_start;
  // Called between elements, at most every check_interval_seconds; an error it returns ends the
  // run with that error (Python's sluice.bench: Ctrl-C, which its released GIL would miss).
  std::function<absl::Status()> check;
  double check_interval_seconds = 0.05;
};

// One node of the pipeline as measured.
struct BenchmarkStage {
  NodeStatsSnapshot stats;
  // busy time / (wall time * parallelism): how much of its capacity the stage
  // used; the highest one is the bottleneck.
  double utilization = 0;
};

struct BenchmarkResult {
  double seconds = 0;
  int64_t elements = 0;
  int64_t examples = 0;
  double examples_per_second = 0;
  std::vector<BenchmarkStage> stages;  // inputs first
  std::string bottleneck;              // the name of the most utilized stage
  int64_t peak_rss_bytes = 0;          // of the whole process (getrusage)
};

// Iterates `dataset` (a fresh iterator) until its end or options.max_seconds,
// counting what it yields, then reads the iterator's per-node stats. An
// element error stops the benchmark and is returned.
absl::StatusOr<BenchmarkResult> RunBenchmark(const Dataset& dataset,
                                             const BenchmarkOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_DATASET_BENCHMARK_H_
