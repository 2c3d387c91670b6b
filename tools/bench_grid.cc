#include "tools/bench_grid.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/json_writer.h"
#include "core/status_macros.h"
#include "tools/bench_run.h"
#include "tools/command_line.h"

namespace sluice::tools::bench {
namespace {

constexpr int64_t kGridParallelism[] = {1, 2, 3, 4, 6, 8};
constexpr int64_t kGridBuffer[] = {1, 2, 4, 8};
constexpr int kGridRepeats = 3;

struct Cell {
  Knobs knobs;
  double rate = 0;
};

// What --grid measured.
struct Grid {
  double seconds = 0;  // a run's
  std::vector<Cell> cells;
  Cell best;
  std::vector<double> tuned_rates, best_rates, convergence_s;
  std::optional<Run> last_tuned;

  double tuned_median() const { return Median(tuned_rates); }
  double best_median() const { return Median(best_rates); }
};

// "[ 3/30] what", rewritten in place on a terminal.
class GridProgress {
 public:
  explicit GridProgress(bool terminal) : terminal_(terminal) {}
  void Next(const std::string& what) {
    if (!terminal_) return;
    std::fprintf(stderr, "\r[%2d/%d] %-40s", ++done_, kTotal, what.c_str());
    std::fflush(stderr);
  }

 private:
  static constexpr int kTotal =
      static_cast<int>(std::size(kGridParallelism) * std::size(kGridBuffer)) + 2 * kGridRepeats;
  bool terminal_;
  int done_ = 0;
};

absl::Status MeasureCells(const Dataset& dataset, const BenchmarkOptions& options, Grid& grid,
                          GridProgress& progress) {
  for (int64_t p : kGridParallelism) {
    for (int64_t b : kGridBuffer) {
      progress.Next(absl::StrCat("parallelism ", p, ", prefetch ", b));
      SLUICE_ASSIGN_OR_RETURN(Run run, RunOnce(dataset, options, Knobs{p, b}, false));
      grid.cells.push_back({{p, b}, run.result.examples_per_second});
    }
  }
  grid.best = *std::max_element(grid.cells.begin(), grid.cells.end(),
                                [](const Cell& a, const Cell& b) { return a.rate < b.rate; });
  return absl::OkStatus();
}

absl::Status MeasureAutotuneAgainstBest(const Dataset& dataset, const BenchmarkOptions& options,
                                        Grid& grid, GridProgress& progress) {
  for (int r = 0; r < kGridRepeats; ++r) {
    progress.Next("AUTOTUNE");
    SLUICE_ASSIGN_OR_RETURN(Run tuned, RunOnce(dataset, options, std::nullopt, false));
    grid.tuned_rates.push_back(tuned.result.examples_per_second);
    const Convergence c = ConvergenceOf(tuned.timeline);
    grid.convergence_s.push_back(c.seconds < 0 ? grid.seconds : c.seconds);
    grid.last_tuned = std::move(tuned);
    progress.Next("best fixed configuration again");
    SLUICE_ASSIGN_OR_RETURN(Run again, RunOnce(dataset, options, grid.best.knobs, false));
    grid.best_rates.push_back(again.result.examples_per_second);
  }
  return absl::OkStatus();
}

void WriteDoubles(const std::vector<double>& values, JsonWriter& w) {
  w.BeginArray();
  for (double v : values) w.Double(v);
  w.EndArray();
}

// A cell's fields, inside an object the caller opened.
void WriteCellFields(const Cell& c, JsonWriter& w) {
  w.Key("parallelism");
  w.Int(c.knobs.parallelism);
  w.Key("prefetch");
  w.Int(c.knobs.buffer_size);
  w.Key("elements_per_second");
  w.Double(c.rate);
}

void WriteAutotuneJson(const Grid& grid, JsonWriter& w) {
  w.BeginObject();
  w.Key("elements_per_second");
  WriteDoubles(grid.tuned_rates, w);
  w.Key("median_elements_per_second");
  w.Double(grid.tuned_median());
  w.Key("percent_of_best_cell");
  w.Double(100 * grid.tuned_median() / std::max(grid.best.rate, 1e-9));
  w.Key("percent_of_best_rerun");
  w.Double(100 * grid.tuned_median() / std::max(grid.best_median(), 1e-9));
  w.Key("convergence_seconds");
  WriteDoubles(grid.convergence_s, w);
  if (grid.last_tuned && grid.last_tuned->report) {
    w.Key("report");
    w.RawValue(grid.last_tuned->report->ToJson());
  }
  w.EndObject();
}

void PrintGridJson(const Grid& grid, const std::string& pipeline) {
  JsonWriter w;
  w.BeginObject();
  w.Key("pipeline");
  w.String(pipeline);
  w.Key("seconds_per_run");
  w.Double(grid.seconds);
  w.Key("grid");
  w.BeginArray();
  for (const Cell& c : grid.cells) {
    w.BeginObject();
    WriteCellFields(c, w);
    w.EndObject();
  }
  w.EndArray();
  w.Key("best");
  w.BeginObject();
  WriteCellFields(grid.best, w);
  w.Key("rerun_elements_per_second");
  WriteDoubles(grid.best_rates, w);
  w.EndObject();
  w.Key("autotune");
  WriteAutotuneJson(grid, w);
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
}

void PrintGridTable(const Grid& grid, const std::string& pipeline) {
  std::printf("pipeline: %s\n", pipeline.c_str());
  std::printf("grid: Map parallelism x Prefetch buffer, images/s over %.1f s each, AUTOTUNE off\n",
              grid.seconds);
  std::printf("%-12s", "parallelism");
  for (int64_t b : kGridBuffer) std::printf("  %9s", absl::StrCat("buffer ", b).c_str());
  std::printf("\n");
  for (size_t i = 0; i < std::size(kGridParallelism); ++i) {
    std::printf("%-12lld", static_cast<long long>(kGridParallelism[i]));
    for (size_t j = 0; j < std::size(kGridBuffer); ++j) {
      const Cell& c = grid.cells[i * std::size(kGridBuffer) + j];
      std::printf("  %8.1f%s", c.rate,
                  c.knobs.parallelism == grid.best.knobs.parallelism &&
                          c.knobs.buffer_size == grid.best.knobs.buffer_size
                      ? "*"
                      : " ");
    }
    std::printf("\n");
  }
}

void PrintGridText(const Grid& grid, const std::string& pipeline) {
  PrintGridTable(grid, pipeline);
  const double tuned_median = grid.tuned_median(), best_median = grid.best_median();
  std::printf("best: parallelism %lld, prefetch %lld: %.1f images/s\n",
              static_cast<long long>(grid.best.knobs.parallelism),
              static_cast<long long>(grid.best.knobs.buffer_size), grid.best.rate);
  std::printf(
      "AUTOTUNE vs the best, alternating %d times (%.1f s each): AUTOTUNE median %.1f images/s, "
      "best again median %.1f images/s\n",
      kGridRepeats, grid.seconds, tuned_median, best_median);
  std::printf("AUTOTUNE = %.1f%% of the best cell, %.1f%% of its re-runs beside AUTOTUNE\n",
              100 * tuned_median / std::max(grid.best.rate, 1e-9),
              100 * tuned_median / std::max(best_median, 1e-9));
  std::printf("AUTOTUNE reached 90%% of its final throughput after %.2f s (median)\n",
              Median(grid.convergence_s));
  if (grid.last_tuned && grid.last_tuned->report) {
    std::printf("\nthe last AUTOTUNE run's report:\n%s",
                grid.last_tuned->report->ToString().c_str());
  }
}

}  // namespace

int RunGrid(const Dataset& dataset, BenchmarkOptions options, double seconds, bool json,
            bool terminal) {
  options.max_seconds = seconds;
  Grid grid{.seconds = seconds};
  GridProgress progress(terminal);
  absl::Status measured = MeasureCells(dataset, options, grid, progress);
  if (measured.ok()) measured = MeasureAutotuneAgainstBest(dataset, options, grid, progress);
  if (!measured.ok()) {
    std::fprintf(stderr, "\nsluice bench: %s\n", std::string(measured.message()).c_str());
    return kExitFailure;
  }
  if (terminal) std::fprintf(stderr, "\n");
  if (json) {
    PrintGridJson(grid, dataset.DebugString());
  } else {
    PrintGridText(grid, dataset.DebugString());
  }
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace sluice::tools::bench
