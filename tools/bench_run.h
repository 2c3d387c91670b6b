#ifndef SLUICE_TOOLS_BENCH_RUN_H_
#define SLUICE_TOOLS_BENCH_RUN_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "autotune/controller.h"
#include "core/json_writer.h"
#include "dataset/benchmark.h"
#include "dataset/dataset.h"

// One measured run of a pipeline for `sluice bench`, with AUTOTUNE or with fixed knobs, and how
// fast its throughput settled.
namespace sluice::tools::bench {

// When each yielded element arrived, for the convergence time.
struct Timeline {
  std::vector<double> seconds;
  std::vector<int64_t> examples;  // cumulative
};

struct Convergence {
  double final_rate = 0;  // examples/s over the second half of the run
  double seconds = -1;    // when the rate first reached 90% of it; -1: never
};

// The rate over a sliding window of `window` elements, against the rate of
// the run's second half.
Convergence ConvergenceOf(const Timeline& t, size_t window = 8, double fraction = 0.9);

// "reached 90% of its final throughput ... at X s", or that it never did.
std::string ConvergenceText(const Convergence& c);

// final_elements_per_second and convergence_seconds, in the object `json` has open.
void ConvergenceJson(const Convergence& c, JsonWriter& json);

// Fixed knobs for one run: every top-level parallel Map's parallelism and the
// last Prefetch's buffer. 0 leaves a knob at its starting value.
struct Knobs {
  int64_t parallelism = 0;
  int64_t buffer_size = 0;
};

struct Run {
  BenchmarkResult result;
  std::optional<AutotuneReport> report;
  Timeline timeline;
};

// One benchmark of `dataset`: with AUTOTUNE (the iterator's own) when `knobs`
// is unset, else with AUTOTUNE off and the knobs fixed.
absl::StatusOr<Run> RunOnce(const Dataset& dataset, BenchmarkOptions options,
                            std::optional<Knobs> knobs, bool show_progress);

double Median(std::vector<double> v);

// The JSON object `sluice bench --json` prints for one run, which sluice.bench returns in Python
// too: `batches` counts the yielded elements (0 when each is one image), `bytes` the input read.
std::string ReportJson(const BenchmarkResult& result, int64_t batches, int64_t bytes,
                       const std::string& pipeline, const std::string& device,
                       const std::optional<AutotuneReport>& autotune,
                       const std::optional<Convergence>& convergence);

}  // namespace sluice::tools::bench

#endif  // SLUICE_TOOLS_BENCH_RUN_H_
