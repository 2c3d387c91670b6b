#include "tools/bench_command.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "autotune/controller.h"
#include "core/json_writer.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "dataset/benchmark.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "profiler/profiler.h"
#include "tools/command_line.h"
#include "tools/device_option.h"
#include "tools/image_pipeline.h"
#include "train/data/prefetch_to_device.h"

namespace sluice::tools {
namespace {

std::string Padded(absl::string_view text, size_t width) {
  std::string out(text);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

std::string KnobText(int64_t value) { return value < 0 ? "-" : absl::StrCat(value); }

// A synthetic pipeline whose stage costs are known: Range -> Map(spin fast)
// -> Map(spin slow) -> Map(spin fast) -> Batch -> Prefetch, with one map
// `skew` times slower than the others. Elements are int64 scalars.
Dataset SkewedPipeline(int64_t slow_us, int64_t skew, int64_t batch, uint64_t seed) {
  auto spin = [](int64_t us) {
    return [us](Element e) -> absl::StatusOr<Element> {
      const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
      while (std::chrono::steady_clock::now() < end) {
      }
      return e;
    };
  };
  const int64_t fast_us = std::max<int64_t>(1, slow_us / skew);
  Options options;
  options.seed = seed;
  return Dataset::Range(std::numeric_limits<int64_t>::max())
      .Map(spin(fast_us), {.num_parallel_calls = kAutotune})
      .Map(spin(slow_us), {.num_parallel_calls = kAutotune})
      .Map(spin(fast_us), {.num_parallel_calls = kAutotune})
      .Batch(batch)
      .Prefetch()
      .WithOptions(options);
}

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
Convergence ConvergenceOf(const Timeline& t, size_t window = 8, double fraction = 0.9) {
  Convergence c;
  const size_t n = t.seconds.size();
  if (n < 2) return c;
  const double end = t.seconds.back();
  size_t half = 0;
  while (half + 1 < n && t.seconds[half] < end / 2) ++half;
  if (half + 1 >= n || end <= t.seconds[half]) return c;
  c.final_rate =
      static_cast<double>(t.examples.back() - t.examples[half]) / (end - t.seconds[half]);
  for (size_t k = window; k < n; ++k) {
    const double dt = t.seconds[k] - t.seconds[k - window];
    if (dt <= 0) continue;
    const double rate = static_cast<double>(t.examples[k] - t.examples[k - window]) / dt;
    if (rate >= fraction * c.final_rate) {
      c.seconds = t.seconds[k];
      break;
    }
  }
  return c;
}

// Fixed knobs for one run: every top-level parallel Map's parallelism and the
// last Prefetch's buffer. 0 leaves a knob at its starting value.
struct Knobs {
  int64_t parallelism = 0;
  int64_t buffer_size = 0;
};

bool IsTopLevelNode(const std::string& name, absl::string_view kind) {
  return absl::StartsWith(name, absl::StrCat(kind, "[")) && name.find('/') == std::string::npos;
}

absl::Status SetKnobs(Iterator& it, const Knobs& knobs) {
  SLUICE_RETURN_IF_ERROR(it.Initialize());  // The knobs exist before any work starts.
  for (const auto& node : it.stats_registry()->Nodes()) {
    if (knobs.parallelism > 0 && IsTopLevelNode(node->name, "Map") &&
        node->parallelism.present.load()) {
      node->parallelism.value.store(knobs.parallelism);
    }
    if (knobs.buffer_size > 0 && IsTopLevelNode(node->name, "Prefetch") &&
        node->buffer_size.present.load()) {
      node->buffer_size.value.store(knobs.buffer_size);
    }
  }
  return absl::OkStatus();
}

struct Run {
  BenchmarkResult result;
  std::optional<AutotuneReport> report;
  Timeline timeline;
};

// One benchmark of `dataset`: with AUTOTUNE (the iterator's own) when `knobs`
// is unset, else with AUTOTUNE off and the knobs fixed.
absl::StatusOr<Run> RunOnce(const Dataset& dataset, BenchmarkOptions options,
                            std::optional<Knobs> knobs, bool show_progress) {
  Options tuning;
  tuning.autotune = !knobs.has_value();
  const Dataset configured = dataset.WithOptions(tuning);
  Run run;
  Iterator* iterator = nullptr;
  options.on_start = [&](Iterator& it) -> absl::Status {
    iterator = &it;
    if (knobs) return SetKnobs(it, *knobs);
    return it.Initialize();  // AUTOTUNE starts with the nodes.
  };
  // Every element's arrival (for the convergence time); the terminal shows a
  // line twice a second.
  double next_display = 0;
  options.progress_interval_seconds = 0;
  options.progress = [&](const BenchmarkProgress& p) {
    // RunBenchmark's last call repeats the totals, while the iterator (and
    // its AUTOTUNE) still lives: the time to read the report.
    const bool last = !run.timeline.examples.empty() && p.examples == run.timeline.examples.back();
    if (!last) {
      run.timeline.seconds.push_back(p.seconds);
      run.timeline.examples.push_back(p.examples);
    } else if (iterator != nullptr && iterator->tuner() != nullptr) {
      absl::StatusOr<AutotuneReport> r = iterator->AutotuneReport();
      if (r.ok()) run.report = *std::move(r);
    }
    if (show_progress && p.seconds >= next_display) {
      std::fprintf(stderr, "\r%6.1f s  %10lld images  %9.1f images/s", p.seconds,
                   static_cast<long long>(p.examples), p.seconds > 0 ? p.examples / p.seconds : 0);
      std::fflush(stderr);
    }
    if (p.seconds >= next_display) next_display = p.seconds + 0.5;
  };
  absl::StatusOr<BenchmarkResult> result = RunBenchmark(configured, options);
  if (show_progress) std::fprintf(stderr, "\n");
  if (!result.ok()) return result.status();
  run.result = *std::move(result);
  return run;
}

std::string ConvergenceText(const Convergence& c) {
  if (c.seconds < 0) {
    return absl::StrFormat("throughput never reached 90%% of its final %.1f/s", c.final_rate);
  }
  return absl::StrFormat(
      "reached 90%% of its final throughput (%.1f/s, the run's second half) at %.2f s "
      "(rate over 8 elements)",
      c.final_rate, c.seconds);
}

void ConvergenceJson(const Convergence& c, JsonWriter& json) {
  json.Key("final_elements_per_second");
  json.Double(c.final_rate);
  json.Key("convergence_seconds");
  if (c.seconds < 0) {
    json.Null();
  } else {
    json.Double(c.seconds);
  }
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// --grid: every fixed configuration, then AUTOTUNE and the best one side by
// side, alternating, so that a change in the machine's load hits both.
int RunGrid(const Dataset& dataset, BenchmarkOptions options, double seconds, bool json,
            bool terminal) {
  constexpr int64_t kParallelism[] = {1, 2, 3, 4, 6, 8};
  constexpr int64_t kBuffer[] = {1, 2, 4, 8};
  constexpr int kRepeats = 3;
  options.max_seconds = seconds;
  struct Cell {
    Knobs knobs;
    double rate = 0;
  };
  std::vector<Cell> cells;
  const int total = static_cast<int>(std::size(kParallelism) * std::size(kBuffer)) + 2 * kRepeats;
  int done = 0;
  auto progress = [&](const std::string& what) {
    if (!terminal) return;
    std::fprintf(stderr, "\r[%2d/%d] %-40s", ++done, total, what.c_str());
    std::fflush(stderr);
  };
  auto fail = [](const absl::Status& s) {
    std::fprintf(stderr, "\nsluice bench: %s\n", std::string(s.message()).c_str());
    return kExitFailure;
  };
  for (int64_t p : kParallelism) {
    for (int64_t b : kBuffer) {
      progress(absl::StrCat("parallelism ", p, ", prefetch ", b));
      absl::StatusOr<Run> run = RunOnce(dataset, options, Knobs{p, b}, false);
      if (!run.ok()) return fail(run.status());
      cells.push_back({{p, b}, run->result.examples_per_second});
    }
  }
  const Cell best = *std::max_element(cells.begin(), cells.end(),
                                      [](const Cell& a, const Cell& b) { return a.rate < b.rate; });
  std::vector<double> tuned_rates, best_rates, convergence_s;
  std::optional<Run> last_tuned;
  for (int r = 0; r < kRepeats; ++r) {
    progress("AUTOTUNE");
    absl::StatusOr<Run> tuned = RunOnce(dataset, options, std::nullopt, false);
    if (!tuned.ok()) return fail(tuned.status());
    tuned_rates.push_back(tuned->result.examples_per_second);
    const Convergence c = ConvergenceOf(tuned->timeline);
    convergence_s.push_back(c.seconds < 0 ? seconds : c.seconds);
    last_tuned = *std::move(tuned);
    progress("best fixed configuration again");
    absl::StatusOr<Run> again = RunOnce(dataset, options, best.knobs, false);
    if (!again.ok()) return fail(again.status());
    best_rates.push_back(again->result.examples_per_second);
  }
  if (terminal) std::fprintf(stderr, "\n");
  const double tuned_median = Median(tuned_rates), best_median = Median(best_rates);
  const double convergence_median = Median(convergence_s);
  const std::string pipeline = dataset.DebugString();
  if (json) {
    JsonWriter w;
    w.BeginObject();
    w.Key("pipeline");
    w.String(pipeline);
    w.Key("seconds_per_run");
    w.Double(seconds);
    w.Key("grid");
    w.BeginArray();
    // A cell's fields, inside an object the caller opened.
    auto cell_fields = [&w](const Cell& c) {
      w.Key("parallelism");
      w.Int(c.knobs.parallelism);
      w.Key("prefetch");
      w.Int(c.knobs.buffer_size);
      w.Key("elements_per_second");
      w.Double(c.rate);
    };
    for (const Cell& c : cells) {
      w.BeginObject();
      cell_fields(c);
      w.EndObject();
    }
    w.EndArray();
    w.Key("best");
    w.BeginObject();
    cell_fields(best);
    w.Key("rerun_elements_per_second");
    w.BeginArray();
    for (double v : best_rates) w.Double(v);
    w.EndArray();
    w.EndObject();
    w.Key("autotune");
    w.BeginObject();
    w.Key("elements_per_second");
    w.BeginArray();
    for (double v : tuned_rates) w.Double(v);
    w.EndArray();
    w.Key("median_elements_per_second");
    w.Double(tuned_median);
    w.Key("percent_of_best_cell");
    w.Double(100 * tuned_median / std::max(best.rate, 1e-9));
    w.Key("percent_of_best_rerun");
    w.Double(100 * tuned_median / std::max(best_median, 1e-9));
    w.Key("convergence_seconds");
    w.BeginArray();
    for (double v : convergence_s) w.Double(v);
    w.EndArray();
    if (last_tuned && last_tuned->report) {
      w.Key("report");
      w.RawValue(last_tuned->report->ToJson());
    }
    w.EndObject();
    w.EndObject();
    std::printf("%s\n", w.str().c_str());
    std::fflush(stdout);
    return kExitOk;
  }
  std::printf("pipeline: %s\n", pipeline.c_str());
  std::printf("grid: Map parallelism x Prefetch buffer, images/s over %.1f s each, AUTOTUNE off\n",
              seconds);
  std::printf("%-12s", "parallelism");
  for (int64_t b : kBuffer) std::printf("  %9s", absl::StrCat("buffer ", b).c_str());
  std::printf("\n");
  for (size_t i = 0; i < std::size(kParallelism); ++i) {
    std::printf("%-12lld", static_cast<long long>(kParallelism[i]));
    for (size_t j = 0; j < std::size(kBuffer); ++j) {
      const Cell& c = cells[i * std::size(kBuffer) + j];
      std::printf("  %8.1f%s", c.rate,
                  c.knobs.parallelism == best.knobs.parallelism &&
                          c.knobs.buffer_size == best.knobs.buffer_size
                      ? "*"
                      : " ");
    }
    std::printf("\n");
  }
  std::printf("best: parallelism %lld, prefetch %lld: %.1f images/s\n",
              static_cast<long long>(best.knobs.parallelism),
              static_cast<long long>(best.knobs.buffer_size), best.rate);
  std::printf(
      "AUTOTUNE vs the best, alternating %d times (%.1f s each): AUTOTUNE median %.1f images/s, "
      "best again median %.1f images/s\n",
      kRepeats, seconds, tuned_median, best_median);
  std::printf("AUTOTUNE = %.1f%% of the best cell, %.1f%% of its re-runs beside AUTOTUNE\n",
              100 * tuned_median / std::max(best.rate, 1e-9),
              100 * tuned_median / std::max(best_median, 1e-9));
  std::printf("AUTOTUNE reached 90%% of its final throughput after %.2f s (median)\n",
              convergence_median);
  if (last_tuned && last_tuned->report) {
    std::printf("\nthe last AUTOTUNE run's report:\n%s", last_tuned->report->ToString().c_str());
  }
  std::fflush(stdout);
  return kExitOk;
}

void PrintText(const BenchConfig& config, const BenchmarkResult& result, int64_t bytes,
               const std::string& pipeline, const std::optional<AutotuneReport>& autotune,
               const std::optional<Convergence>& convergence) {
  std::printf("pipeline: %s\n", pipeline.c_str());
  std::printf("%lld images in %.2f s: %.1f images/s, %.1f MB/s of records\n",
              static_cast<long long>(result.examples), result.seconds, result.examples_per_second,
              bytes / std::max(result.seconds, 1e-9) / 1e6);
  size_t width = 5;
  for (const BenchmarkStage& stage : result.stages)
    width = std::max(width, stage.stats.name.size());
  std::printf("  %s  %10s  %9s  %6s  %11s  %6s\n", Padded("stage", width).c_str(), "elements",
              "busy s", "share", "parallelism", "buffer");
  for (const BenchmarkStage& stage : result.stages) {
    const NodeStatsSnapshot& s = stage.stats;
    std::printf("  %s  %10lld  %9.3f  %5.1f%%  %11s  %6s\n", Padded(s.name, width).c_str(),
                static_cast<long long>(s.elements_produced), s.busy_ns / 1e9,
                100 * stage.utilization, KnobText(s.parallelism).c_str(),
                KnobText(s.buffer_size).c_str());
  }
  double highest = 0;
  for (const BenchmarkStage& stage : result.stages) highest = std::max(highest, stage.utilization);
  std::printf("bottleneck: %s (%.0f%% of its capacity)%s\n", result.bottleneck.c_str(),
              100 * highest,
              highest < 0.5 ? ": no stage is saturated, so CPU contention or hand-offs between "
                              "stages limit the rate"
                            : "");
  std::printf("peak RSS: %.1f MB\n", result.peak_rss_bytes / 1e6);
  if (convergence) std::printf("%s\n", ConvergenceText(*convergence).c_str());
  if (autotune) std::printf("\n%s", autotune->ToString().c_str());
}

void PrintJson(const BenchConfig& config, const BenchmarkResult& result, int64_t bytes,
               const std::string& pipeline, const std::optional<AutotuneReport>& autotune,
               const std::optional<Convergence>& convergence) {
  JsonWriter json;
  json.BeginObject();
  json.Key("elements_per_second");
  json.Double(result.examples_per_second);
  json.Key("bytes_per_second");
  json.Double(bytes / std::max(result.seconds, 1e-9));
  json.Key("elements");
  json.Int(result.examples);
  json.Key("batches");
  json.Int(config.decode_only ? 0 : result.elements);
  json.Key("bytes");
  json.Int(bytes);
  json.Key("seconds");
  json.Double(result.seconds);
  json.Key("pipeline");
  json.String(pipeline);
  json.Key("device");
  json.String(config.device.DebugString());
  json.Key("stages");
  json.BeginArray();
  for (const BenchmarkStage& stage : result.stages) {
    const NodeStatsSnapshot& s = stage.stats;
    json.BeginObject();
    json.Key("name");
    json.String(s.name);
    json.Key("kind");
    json.String(NodeKindName(s.kind));
    json.Key("elements");
    json.Int(s.elements_produced);
    json.Key("bytes");
    json.Int(s.bytes_produced);
    json.Key("busy_ns");
    json.Int(s.busy_ns);
    json.Key("wait_ns");
    json.Int(s.wait_ns);
    json.Key("utilization");
    json.Double(stage.utilization);
    json.Key("parallelism");
    json.Int(s.parallelism);
    json.Key("buffer_size");
    json.Int(s.buffer_size);
    json.Key("buffered_elements");
    json.Int(s.buffered_elements);
    json.Key("skipped");
    json.Int(s.skipped);
    json.EndObject();
  }
  json.EndArray();
  json.Key("bottleneck");
  json.String(result.bottleneck);
  json.Key("peak_rss_bytes");
  json.Int(result.peak_rss_bytes);
  if (convergence) ConvergenceJson(*convergence, json);
  if (autotune) {
    json.Key("autotune");
    json.RawValue(autotune->ToJson());
  }
  json.EndObject();
  std::printf("%s\n", json.str().c_str());
}

// What the command line asks `sluice bench` to run.
struct BenchArgs {
  BenchConfig config;
  bool skewed = false;  // --pipeline skewed
  int64_t slow_us = 0, skew = 0;
  bool grid = false;
  double grid_seconds = 0;
  bool json = false;
  bool autotune_report = false;   // --autotune
  std::string profile;            // --profile DIR
  int64_t checkpoint_after = -1;  // --checkpoint-after N; -1: not given
  int64_t compare = 64;           // --compare K
};

void AddBenchOptions(CommandLine& command_line) {
  command_line.AddOption("files", "GLOB", "",
                         "TFRecord files of image/encoded + image/class/label; required for "
                         "--pipeline images (or --images)");
  command_line.AddOption("images", "DIR", "",
                         "instead of --files: a directory of class folders of JPEGs "
                         "(ImageDatasetFromDirectory's layout), each file read with ReadFile");
  command_line.AddOption("pipeline", "NAME", "images",
                         "images (the ImageNet-style pipeline) or skewed (synthetic)");
  command_line.AddOption("slow-us", "US", "1000", "--pipeline skewed: the slow Map's spin");
  command_line.AddOption("skew", "X", "10", "--pipeline skewed: how much slower the slow Map is");
  command_line.AddOption("parallelism", "N", "autotune",
                         "num_parallel_calls of the Maps; a number fixes them and turns "
                         "AUTOTUNE off (the other knobs keep their starting values)");
  command_line.AddFlag("autotune", "print AUTOTUNE's report (what it chose, when and why)");
  command_line.AddFlag("grid",
                       "run fixed configurations (Map parallelism 1, 2, 3, 4, 6, 8 x prefetch "
                       "buffer 1, 2, 4, 8), print the table and the best, then run AUTOTUNE "
                       "for as long and compare");
  command_line.AddOption("grid-seconds", "S", "3", "--grid: seconds per configuration");
  command_line.AddOption("profile", "DIR", "",
                         "profile the run into DIR: a Chrome trace of every node's GetNext, Map "
                         "call, Prefetch wait and file read (Perfetto, chrome://tracing, "
                         "TensorBoard), with a summary on stderr");
  command_line.AddOption("batch", "N", "64", "batch size");
  command_line.AddOption("image-size", "N", "224", "output height and width of the crop");
  command_line.AddFlag("cache", "cache the parsed records in memory after the first epoch");
  command_line.AddOption("snapshot", "DIR", "",
                         "decode whole images and Snapshot them into DIR, cropping after it: "
                         "the first run writes DIR, later epochs and runs read it");
  command_line.AddOption("seconds", "S", "10", "run this long (over a repeated dataset)");
  command_line.AddOption("epochs", "E", "", "run E epochs instead of --seconds");
  command_line.AddFlag("decode-only", "the ceiling: full JPEG decode only, no crop/resize/batch");
  command_line.AddOption("shuffle", "N", "",
                         "Shuffle(N) right after the decode (of whole images with --decode-only, "
                         "of the crops otherwise); N decoded images stay in memory");
  command_line.AddOption("checkpoint-after", "N", "",
                         "instead of measuring throughput: read N elements, save the iterator's "
                         "checkpoint, restore it into a fresh iterator, and report the "
                         "checkpoint's size, the save and restore times, and whether the next "
                         "--compare elements of both are identical");
  command_line.AddOption("compare", "K", "64", "--checkpoint-after: elements compared");
  command_line.AddFlag("checkpoint-elements",
                       "--checkpoint-after: save buffered elements whole "
                       "(Options::checkpoint_sources = false), to compare");
  command_line.AddOption("seed", "S", "0", "pipeline seed");
  command_line.AddOption("device", "DEV", "cpu",
                         "cpu, or cuda / cuda:N: end the pipeline with PrefetchToDevice, so that "
                         "the batches are counted once they are on the GPU (needs a CUDA build "
                         "and a GPU)");
  command_line.AddFlag("json", "print one JSON object instead of the table");
}

// The run the options describe; InvalidArgument (a usage error) names a bad option.
absl::StatusOr<BenchArgs> ParseBenchArgs(const CommandLine& command_line) {
  BenchArgs args;
  BenchConfig& config = args.config;
  config.files = command_line.Value("files");
  config.images_dir = command_line.Value("images");
  const std::string& pipeline_name = command_line.Value("pipeline");
  const bool skewed = args.skewed = pipeline_name == "skewed";
  if (!skewed && pipeline_name != "images") {
    return absl::InvalidArgumentError(
        absl::StrCat("--pipeline takes images or skewed, not '", pipeline_name, "'"));
  }
  if (!skewed && config.files.empty() == config.images_dir.empty()) {
    return absl::InvalidArgumentError("give --files GLOB or --images DIR (one of them)");
  }
  if (skewed && (command_line.WasGiven("files") || command_line.WasGiven("images"))) {
    return absl::InvalidArgumentError("--pipeline skewed reads no --files or --images");
  }
  for (const char* option : {"slow-us", "skew"}) {
    if (!skewed && command_line.WasGiven(option)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", option, " applies to --pipeline skewed"));
    }
  }
  const bool grid = args.grid = command_line.Flag("grid");
  const std::string& parallelism = command_line.Value("parallelism");
  if (command_line.WasGiven("parallelism") && command_line.Flag("autotune")) {
    return absl::InvalidArgumentError("give --parallelism N or --autotune, not both");
  }
  if (command_line.WasGiven("parallelism") && grid) {
    return absl::InvalidArgumentError("--grid sets the parallelism itself");
  }
  if (command_line.WasGiven("grid-seconds") && !grid) {
    return absl::InvalidArgumentError("--grid-seconds applies to --grid");
  }
  if (parallelism != "autotune" &&
      (!absl::SimpleAtoi(parallelism, &config.parallelism) || config.parallelism < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--parallelism takes a count >= 1 or 'autotune', not '", parallelism, "'"));
  }
  for (auto [name, out] : {std::pair<const char*, int64_t*>{"batch", &config.batch},
                           {"image-size", &config.image_size},
                           {"slow-us", &args.slow_us},
                           {"skew", &args.skew}}) {
    absl::StatusOr<int64_t> value = command_line.IntValue(name, 1);
    if (!value.ok()) return value.status();
    *out = *value;
  }
  if (command_line.WasGiven("epochs")) {
    if (command_line.WasGiven("seconds")) {
      return absl::InvalidArgumentError("give --seconds or --epochs, not both");
    }
    if (grid || skewed) {
      return absl::InvalidArgumentError("--grid and --pipeline skewed run for --seconds");
    }
    absl::StatusOr<int64_t> epochs = command_line.IntValue("epochs", 1);
    if (!epochs.ok()) return epochs.status();
    config.epochs = *epochs;
  } else {
    absl::StatusOr<double> seconds = command_line.DoubleValue("seconds", 0);
    if (!seconds.ok()) return seconds.status();
    config.seconds = *seconds;
  }
  absl::StatusOr<double> grid_seconds = command_line.DoubleValue("grid-seconds", 0);
  if (!grid_seconds.ok()) return grid_seconds.status();
  args.grid_seconds = *grid_seconds;
  if (!absl::SimpleAtoi(command_line.Value("seed"), &config.seed)) {
    return absl::InvalidArgumentError("--seed takes an unsigned integer");
  }
  config.cache = command_line.Flag("cache");
  config.decode_only = command_line.Flag("decode-only");
  config.snapshot = command_line.Value("snapshot");
  if (skewed && (config.cache || config.decode_only || !config.snapshot.empty() ||
                 command_line.WasGiven("image-size"))) {
    return absl::InvalidArgumentError(
        "--cache, --decode-only, --snapshot and --image-size apply to --pipeline images");
  }
  if (!config.snapshot.empty() && (config.cache || config.decode_only)) {
    return absl::InvalidArgumentError("--snapshot goes with neither --cache nor --decode-only");
  }
  if (command_line.WasGiven("shuffle")) {
    if (skewed || !config.snapshot.empty()) {
      return absl::InvalidArgumentError(
          "--shuffle applies to --pipeline images without --snapshot");
    }
    SLUICE_ASSIGN_OR_RETURN(config.shuffle, command_line.IntValue("shuffle", 1));
  }
  if (command_line.WasGiven("checkpoint-after")) {
    if (skewed || grid || command_line.WasGiven("profile") || config.epochs > 0) {
      return absl::InvalidArgumentError(
          "--checkpoint-after applies to --pipeline images, without --grid, --profile or "
          "--epochs");
    }
    SLUICE_ASSIGN_OR_RETURN(args.checkpoint_after, command_line.IntValue("checkpoint-after", 0));
    SLUICE_ASSIGN_OR_RETURN(args.compare, command_line.IntValue("compare", 1));
    config.checkpoint_sources = !command_line.Flag("checkpoint-elements");
  } else if (command_line.WasGiven("compare") || command_line.Flag("checkpoint-elements")) {
    return absl::InvalidArgumentError(
        "--compare and --checkpoint-elements apply to --checkpoint-after");
  }
  SLUICE_ASSIGN_OR_RETURN(config.device, ParseDevice(command_line.Value("device")));
  args.json = command_line.Flag("json");
  args.profile = command_line.Value("profile");
  args.autotune_report = command_line.Flag("autotune");
  return args;
}

// --checkpoint-after: what a checkpoint of the pipeline costs mid-stream, and whether a fresh
// iterator restored from it goes on exactly as the original does.
int RunCheckpoint(const Dataset& dataset, const BenchArgs& args, bool terminal) {
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  auto fail = [](const std::string& what, const absl::Status& status) {
    std::fprintf(stderr, "sluice bench: %s: %s\n", what.c_str(),
                 std::string(status.message()).c_str());
    return kExitFailure;
  };
  std::unique_ptr<Iterator> it = dataset.MakeIterator();
  const Clock::time_point start = Clock::now();
  double next_display = 0.5;
  for (int64_t i = 0; i < args.checkpoint_after; ++i) {
    absl::StatusOr<std::optional<Element>> e = it->GetNext();
    if (!e.ok()) return fail("reading", e.status());
    if (!e->has_value()) return fail("reading", absl::OutOfRangeError("the pipeline ended"));
    if (terminal && seconds_since(start) >= next_display) {
      std::fprintf(stderr, "\r%6.1f s  %10lld / %lld elements", seconds_since(start),
                   static_cast<long long>(i + 1), static_cast<long long>(args.checkpoint_after));
      next_display += 0.5;
    }
  }
  if (terminal) std::fprintf(stderr, "\r%60s\r", "");
  const double read_s = seconds_since(start);

  Clock::time_point t = Clock::now();
  absl::StatusOr<std::string> saved = it->Save();
  const double save_s = seconds_since(t);
  if (!saved.ok()) return fail("Save", saved.status());
  std::unique_ptr<Iterator> fresh = dataset.MakeIterator();
  t = Clock::now();
  absl::Status restored = fresh->Restore(*saved);
  const double restore_s = seconds_since(t);
  if (!restored.ok()) return fail("Restore", restored);

  int64_t compared = 0;
  bool identical = true;
  for (; compared < args.compare && identical; ++compared) {
    absl::StatusOr<std::optional<Element>> a = it->GetNext();
    absl::StatusOr<std::optional<Element>> b = fresh->GetNext();
    if (!a.ok()) return fail("reading on", a.status());
    if (!b.ok()) return fail("reading on after the restore", b.status());
    identical = a->has_value() == b->has_value() && (!a->has_value() || ElementsEqual(**a, **b));
  }
  if (args.json) {
    JsonWriter json;
    json.BeginObject();
    json.Key("pipeline");
    json.String(dataset.DebugString());
    json.Key("elements_before");
    json.Int(args.checkpoint_after);
    json.Key("read_seconds");
    json.Double(read_s);
    json.Key("checkpoint_bytes");
    json.Int(static_cast<int64_t>(saved->size()));
    json.Key("save_seconds");
    json.Double(save_s);
    json.Key("restore_seconds");
    json.Double(restore_s);
    json.Key("compared");
    json.Int(compared);
    json.Key("identical");
    json.RawValue(identical ? "true" : "false");
    json.EndObject();
    std::printf("%s\n", json.str().c_str());
  } else {
    std::printf("pipeline: %s\n", dataset.DebugString().c_str());
    std::printf("checkpoint after %lld elements (read in %.1f s): %lld bytes (%.2f MB)\n",
                static_cast<long long>(args.checkpoint_after), read_s,
                static_cast<long long>(saved->size()), saved->size() / 1e6);
    std::printf("save %.1f ms, restore %.1f ms\n", save_s * 1e3, restore_s * 1e3);
    std::printf("next %lld elements of the restored iterator: %s\n",
                static_cast<long long>(compared),
                identical ? "identical to the original's" : "DIFFERENT from the original's");
  }
  std::fflush(stdout);
  return identical ? kExitOk : kExitFailure;
}

// Builds the pipeline and runs it once (or the grid), printing the results.
int RunBenchWith(const BenchArgs& args) {
  const BenchConfig& config = args.config;
  auto record_bytes = std::make_shared<std::atomic<int64_t>>(0);
  absl::StatusOr<Dataset> dataset = args.skewed
                                        ? absl::StatusOr<Dataset>(SkewedPipeline(
                                              args.slow_us, args.skew, config.batch, config.seed))
                                        : BuildPipeline(config, record_bytes);
  if (dataset.ok() && !config.device.is_cpu()) {
    absl::Status available = CheckDeviceAvailable(config.device);
    if (available.ok()) {
      dataset = train::data::PrefetchToDevice(*dataset, config.device);
    } else {
      dataset = available;
    }
  }
  if (!dataset.ok()) {
    std::fprintf(stderr, "sluice bench: %s\n", std::string(dataset.status().message()).c_str());
    return kExitFailure;
  }
  BenchmarkOptions options;
  options.max_seconds = config.epochs > 0 ? 0 : config.seconds;
  // Unbatched, an element is one image (whose first dimension is its height).
  if (config.decode_only) options.count_examples = [](const Element&) { return int64_t{1}; };
  const bool terminal = isatty(2) == 1;
  if (args.checkpoint_after >= 0) {
    return RunCheckpoint(*dataset, args, terminal);
  }
  if (args.grid) return RunGrid(*dataset, options, args.grid_seconds, args.json, terminal);

  // A fixed parallelism is built into the pipeline and AUTOTUNE is off;
  // otherwise the iterator runs AUTOTUNE on its kAutotune knobs.
  std::optional<Knobs> knobs;
  if (config.parallelism != kAutotune) knobs = Knobs{};
  if (args.skewed && config.parallelism != kAutotune) knobs->parallelism = config.parallelism;
  if (!args.profile.empty()) {
    absl::Status started = profiler::Start(args.profile);
    if (!started.ok()) {
      std::fprintf(stderr, "sluice bench: --profile: %s\n", std::string(started.message()).c_str());
      return kExitFailure;
    }
  }
  absl::StatusOr<Run> run = RunOnce(*dataset, options, knobs, terminal);
  if (!args.profile.empty()) {
    absl::StatusOr<profiler::Report> report = profiler::Stop();
    if (!report.ok()) {
      std::fprintf(stderr, "sluice bench: --profile: %s\n",
                   std::string(report.status().message()).c_str());
      return kExitFailure;
    }
    std::fprintf(stderr, "%s(trace: %s; TensorBoard: %s)\n", report->summary.c_str(),
                 report->trace_path.c_str(), report->tensorboard_path.c_str());
  }
  if (!run.ok()) {
    std::fprintf(stderr, "sluice bench: %s\n", std::string(run.status().message()).c_str());
    return kExitFailure;
  }
  std::optional<AutotuneReport> autotune;
  std::optional<Convergence> convergence;
  if (args.autotune_report) {
    autotune = run->report;
    if (run->report) convergence = ConvergenceOf(run->timeline);
  }
  const int64_t bytes = record_bytes->load();
  if (args.json) {
    PrintJson(config, run->result, bytes, dataset->DebugString(), autotune, convergence);
  } else {
    PrintText(config, run->result, bytes, dataset->DebugString(), autotune, convergence);
  }
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

int RunBench(int argc, char** argv) {
  CommandLine command_line(
      "sluice bench",
      "Runs the ImageNet-style training input pipeline over TFRecord files of JPEGs:\n"
      "ListFiles -> Interleave(TFRecord) -> Map(parse) [-> Cache] -> Repeat ->\n"
      "Map(decode + random resized crop + random flip + normalize to float32) -> Batch ->\n"
      "Prefetch (with --images DIR, FromTensorSlices(paths) -> Map(ReadFile) replaces the\n"
      "first three stages), and reports images/s, input MB/s, per-stage stats, the bottleneck (the "
      "stage\n"
      "with the highest busy time / (wall time * parallelism)) and peak RSS. AUTOTUNE tunes the\n"
      "pipeline while it runs unless --parallelism fixes it. --grid measures fixed\n"
      "configurations and then AUTOTUNE against the best of them. --pipeline skewed runs a\n"
      "synthetic pipeline instead: three spinning Maps, the middle one --skew times slower.");
  AddBenchOptions(command_line);
  if (std::optional<int> exit = command_line.ParseOrReport(argc, argv)) return *exit;
  absl::StatusOr<BenchArgs> args = ParseBenchArgs(command_line);
  if (!args.ok()) return command_line.ReportUsageError(args.status().message());
  return RunBenchWith(*args);
}

}  // namespace sluice::tools
