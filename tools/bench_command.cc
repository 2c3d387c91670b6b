#include "tools/bench_command.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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
#include "tools/bench_grid.h"
#include "tools/bench_run.h"
#include "tools/command_line.h"
#include "tools/device_option.h"
#include "tools/option_table.h"
#include "train/data/prefetch_to_device.h"
#include "train/recipes/imagenet_pipeline.h"

namespace sluice::tools {
namespace {

using bench::Convergence;
using bench::Knobs;
using bench::Run;

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

// What the command line asks `sluice bench` to run.
struct BenchArgs {
  train::recipes::ImageNetPipelineOptions pipeline;
  std::string pipeline_name = "images";  // --pipeline: images or skewed
  int64_t slow_us = 1000, skew = 10;     // --pipeline skewed
  bool autotune_report = false;          // --autotune
  bool grid = false;
  double grid_seconds = 3;
  std::string profile;            // --profile DIR
  double seconds = 10;            // unless --epochs
  int64_t checkpoint_after = -1;  // --checkpoint-after N; -1: not given
  int64_t compare = 64;           // --compare K
  bool checkpoint_elements = false;
  // Not the host: the pipeline ends with PrefetchToDevice to this device.
  Device device = Device::Cpu();
  bool json = false;

  bool skewed() const { return pipeline_name == "skewed"; }
};

using BenchRow = OptionRow<BenchArgs>;
using Pipeline = train::recipes::ImageNetPipelineOptions;

template <typename... Members>
auto Arg(Members... path) {
  return Field<BenchArgs>(path...);
}
template <typename... Members>
auto Pipe(Members... path) {
  return Field<BenchArgs>(&BenchArgs::pipeline, path...);
}

// More calls in flight than this only buffer elements: 100,000 took 2 GB and 8x --seconds.
constexpr int kMaxParallelism = 1024;

absl::StatusOr<int> Parallelism(absl::string_view flag, const std::string& text) {
  int value;
  if (text == "autotune") return kAutotune;
  if (!absl::SimpleAtoi(text, &value) || value < 1 || value > kMaxParallelism) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " takes a count in [1, ", kMaxParallelism,
                                                   "] or 'autotune', not '", text, "'"));
  }
  return value;
}

std::vector<BenchRow> SourceAndTuningRows() {
  return {
      Option("files", "GLOB", Pipe(&Pipeline::files),
             "TFRecord files of image/encoded + image/class/label; required for --pipeline images "
             "(or --images)"),
      Option("images", "DIR", Pipe(&Pipeline::images_dir),
             "instead of --files: a directory of class folders of JPEGs "
             "(ImageDatasetFromDirectory's layout), each file read with ReadFile"),
      Option("pipeline", "NAME", Arg(&BenchArgs::pipeline_name),
             "images (the ImageNet-style pipeline) or skewed (synthetic)",
             {.parse = Choice({"images", "skewed"})}),
      Option("slow-us", "US", Arg(&BenchArgs::slow_us), "--pipeline skewed: the slow Map's spin",
             {.min = 1}),
      Option("skew", "X", Arg(&BenchArgs::skew),
             "--pipeline skewed: how much slower the slow Map is", {.min = 1}),
      Option("parallelism", "N", Pipe(&Pipeline::parallelism),
             "num_parallel_calls of the Maps; a number fixes them and turns AUTOTUNE off (the "
             "other knobs keep their starting values)",
             {.parse = Parallelism,
              .format =
                  [](const int& p) {
                    return p == kAutotune ? std::string("autotune") : absl::StrCat(p);
                  }}),
      Flag("autotune", Arg(&BenchArgs::autotune_report),
           "print AUTOTUNE's report (what it chose, when and why)"),
      Flag("grid", Arg(&BenchArgs::grid),
           "run fixed configurations (Map parallelism 1, 2, 3, 4, 6, 8 x prefetch buffer 1, 2, 4, "
           "8), print the table and the best, then run AUTOTUNE for as long and compare"),
      Option("grid-seconds", "S", Arg(&BenchArgs::grid_seconds),
             "--grid: seconds per configuration", {.bound = CommandLine::Bound::kExclusive}),
      Option("profile", "DIR", Arg(&BenchArgs::profile),
             "profile the run into DIR: a Chrome trace of every node's GetNext, Map call, Prefetch "
             "wait and file read (Perfetto, chrome://tracing, TensorBoard), with a summary on "
             "stderr"),
  };
}

std::vector<BenchRow> PipelineRows() {
  return {
      Option("batch", "N", Pipe(&Pipeline::batch_size), "batch size", {.min = 1}),
      Option("image-size", "N", Pipe(&Pipeline::image_size), "output height and width of the crop",
             {.min = 1, .max = 4096}),
      Flag("cache", Pipe(&Pipeline::cache),
           "cache the parsed records in memory after the first epoch"),
      Option("snapshot", "DIR", Pipe(&Pipeline::snapshot),
             "decode whole images and Snapshot them into DIR, cropping after it: the first run "
             "writes DIR, later epochs and runs read it"),
      Option("seconds", "S", Arg(&BenchArgs::seconds), "run this long (over a repeated dataset)",
             {.bound = CommandLine::Bound::kExclusive}),
      Option("epochs", "E", Pipe(&Pipeline::epochs), "run E epochs instead of --seconds",
             {.shown_default = "", .min = 1}),
      Flag("decode-only", Pipe(&Pipeline::decode_only),
           "the ceiling: full JPEG decode only, no crop/resize/batch"),
      Option("shuffle", "N", Pipe(&Pipeline::shuffle),
             "Shuffle(N) right after the decode (of whole images with --decode-only, of the crops "
             "otherwise); N decoded images stay in memory",
             {.shown_default = "", .min = 1}),
  };
}

std::vector<BenchRow> CheckpointAndOutputRows() {
  return {
      Option("checkpoint-after", "N", Arg(&BenchArgs::checkpoint_after),
             "instead of measuring throughput: read N elements, save the iterator's checkpoint, "
             "restore it into a fresh iterator, and report the checkpoint's size, the save and "
             "restore times, and whether the next --compare elements of both are identical",
             {.shown_default = ""}),
      Option("compare", "K", Arg(&BenchArgs::compare), "--checkpoint-after: elements compared",
             {.min = 1}),
      Flag("checkpoint-elements", Arg(&BenchArgs::checkpoint_elements),
           "--checkpoint-after: save buffered elements whole (Options::checkpoint_sources = "
           "false), to compare"),
      Option("seed", "S", Pipe(&Pipeline::seed), "pipeline seed", {.parse = UnsignedInteger}),
      Option("device", "DEV", Arg(&BenchArgs::device),
             "cpu, or cuda / cuda:N: end the pipeline with PrefetchToDevice, so that the batches "
             "are counted once they are on the GPU (needs a CUDA build and a GPU)",
             DeviceOptionSpec()),
      Flag("json", Arg(&BenchArgs::json), "print one JSON object instead of the table"),
  };
}

const OptionTable<BenchArgs>& BenchOptions() {
  static const auto* table = new OptionTable<BenchArgs>(
      {SourceAndTuningRows(), PipelineRows(), CheckpointAndOutputRows()});
  return *table;
}

// --pipeline skewed is synthetic: it takes none of the image pipeline's options.
absl::Status CheckPipelineOptions(const CommandLine& command_line, const BenchArgs& args) {
  const bool skewed = args.skewed();
  const Pipeline& pipeline = args.pipeline;
  if (!skewed && pipeline.files.empty() == pipeline.images_dir.empty()) {
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
  if (skewed && (pipeline.cache || pipeline.decode_only || !pipeline.snapshot.empty() ||
                 command_line.WasGiven("image-size"))) {
    return absl::InvalidArgumentError(
        "--cache, --decode-only, --snapshot and --image-size apply to --pipeline images");
  }
  if (!pipeline.snapshot.empty() && (pipeline.cache || pipeline.decode_only)) {
    return absl::InvalidArgumentError("--snapshot goes with neither --cache nor --decode-only");
  }
  if (command_line.WasGiven("shuffle") && (skewed || !pipeline.snapshot.empty())) {
    return absl::InvalidArgumentError("--shuffle applies to --pipeline images without --snapshot");
  }
  // The ceiling decodes whole images one by one: no crop size, no batches.
  for (const char* option : {"batch", "image-size"}) {
    if (pipeline.decode_only && command_line.WasGiven(option)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", option, " does not apply to --decode-only (whole images, unbatched)"));
    }
  }
  return absl::OkStatus();
}

// How long it runs, and what it measures: AUTOTUNE or fixed knobs, the grid, a checkpoint.
absl::Status CheckRunOptions(const CommandLine& command_line, const BenchArgs& args) {
  const bool parallelism = command_line.WasGiven("parallelism");
  if (parallelism && args.autotune_report) {
    return absl::InvalidArgumentError("give --parallelism N or --autotune, not both");
  }
  if (parallelism && args.grid) {
    return absl::InvalidArgumentError("--grid sets the parallelism itself");
  }
  // The grid runs each configuration for --grid-seconds and prints AUTOTUNE's report anyway.
  for (const char* option : {"seconds", "profile", "autotune"}) {
    if (args.grid && command_line.WasGiven(option)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", option,
                       " does not apply to --grid (each configuration runs --grid-seconds, and "
                       "the AUTOTUNE run prints its report)"));
    }
  }
  if (command_line.WasGiven("grid-seconds") && !args.grid) {
    return absl::InvalidArgumentError("--grid-seconds applies to --grid");
  }
  if (command_line.WasGiven("epochs")) {
    if (command_line.WasGiven("seconds")) {
      return absl::InvalidArgumentError("give --seconds or --epochs, not both");
    }
    if (args.grid || args.skewed()) {
      return absl::InvalidArgumentError("--grid and --pipeline skewed run for --seconds");
    }
  }
  if (command_line.WasGiven("checkpoint-after")) {
    if (args.skewed() || args.grid || command_line.WasGiven("profile") ||
        args.pipeline.epochs > 0 || command_line.WasGiven("seconds") || args.autotune_report) {
      return absl::InvalidArgumentError(
          "--checkpoint-after applies to --pipeline images, without --grid, --profile, "
          "--epochs, --seconds or --autotune (it reads N elements, then --compare more)");
    }
  } else if (command_line.WasGiven("compare") || args.checkpoint_elements) {
    return absl::InvalidArgumentError(
        "--compare and --checkpoint-elements apply to --checkpoint-after");
  }
  return absl::OkStatus();
}

// What no single option can check; InvalidArgument (a usage error) names a bad option.
absl::Status CheckBenchArgs(const CommandLine& command_line, BenchArgs& args) {
  SLUICE_RETURN_IF_ERROR(CheckPipelineOptions(command_line, args));
  SLUICE_RETURN_IF_ERROR(CheckRunOptions(command_line, args));
  args.pipeline.checkpoint_sources = !args.checkpoint_elements;
  return absl::OkStatus();
}

void PrintText(const BenchmarkResult& result, int64_t bytes, const std::string& pipeline,
               const std::optional<AutotuneReport>& autotune,
               const std::optional<Convergence>& convergence) {
  std::printf("pipeline: %s\n", pipeline.c_str());
  // A snapshot written before, or a cache filled, serves the images without reading a record.
  const std::string records =
      bytes > 0 || result.examples == 0
          ? absl::StrFormat("%.1f MB/s of records", bytes / std::max(result.seconds, 1e-9) / 1e6)
          : std::string("no records read (a snapshot or the cache served them)");
  std::printf("%lld images in %.2f s: %.1f images/s, %s\n", static_cast<long long>(result.examples),
              result.seconds, result.examples_per_second, records.c_str());
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

void PrintJson(const BenchArgs& args, const BenchmarkResult& result, int64_t bytes,
               const std::string& pipeline, const std::optional<AutotuneReport>& autotune,
               const std::optional<Convergence>& convergence) {
  const int64_t batches = args.pipeline.decode_only ? 0 : result.elements;
  std::printf("%s\n", bench::ReportJson(result, batches, bytes, pipeline, args.device.DebugString(),
                                        autotune, convergence)
                          .c_str());
}

// --checkpoint-after: what a checkpoint of the pipeline costs mid-stream, and whether a fresh
// iterator restored from it goes on exactly as the original does.
// What --checkpoint-after measured.
struct CheckpointRun {
  double read_s = 0, save_s = 0, restore_s = 0;
  int64_t bytes = 0;
  int64_t compared = 0;
  bool identical = true;
};

void PrintCheckpointRun(const Dataset& dataset, const BenchArgs& args, const CheckpointRun& run) {
  if (!args.json) {
    std::printf("pipeline: %s\n", dataset.DebugString().c_str());
    std::printf("checkpoint after %lld elements (read in %.1f s): %lld bytes (%.2f MB)\n",
                static_cast<long long>(args.checkpoint_after), run.read_s,
                static_cast<long long>(run.bytes), run.bytes / 1e6);
    std::printf("save %.1f ms, restore %.1f ms\n", run.save_s * 1e3, run.restore_s * 1e3);
    std::printf("next %lld elements of the restored iterator: %s\n",
                static_cast<long long>(run.compared),
                run.identical ? "identical to the original's" : "DIFFERENT from the original's");
    return;
  }
  JsonWriter json;
  json.BeginObject();
  json.Key("pipeline");
  json.String(dataset.DebugString());
  json.Key("elements_before");
  json.Int(args.checkpoint_after);
  json.Key("read_seconds");
  json.Double(run.read_s);
  json.Key("checkpoint_bytes");
  json.Int(run.bytes);
  json.Key("save_seconds");
  json.Double(run.save_s);
  json.Key("restore_seconds");
  json.Double(run.restore_s);
  json.Key("compared");
  json.Int(run.compared);
  json.Key("identical");
  json.RawValue(run.identical ? "true" : "false");
  json.EndObject();
  std::printf("%s\n", json.str().c_str());
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
  CheckpointRun run;
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
  run.read_s = seconds_since(start);

  Clock::time_point t = Clock::now();
  absl::StatusOr<std::string> saved = it->Save();
  run.save_s = seconds_since(t);
  if (!saved.ok()) return fail("Save", saved.status());
  run.bytes = static_cast<int64_t>(saved->size());
  std::unique_ptr<Iterator> fresh = dataset.MakeIterator();
  t = Clock::now();
  absl::Status restored = fresh->Restore(*saved);
  run.restore_s = seconds_since(t);
  if (!restored.ok()) return fail("Restore", restored);

  for (; run.compared < args.compare && run.identical; ++run.compared) {
    absl::StatusOr<std::optional<Element>> a = it->GetNext();
    absl::StatusOr<std::optional<Element>> b = fresh->GetNext();
    if (!a.ok()) return fail("reading on", a.status());
    if (!b.ok()) return fail("reading on after the restore", b.status());
    run.identical =
        a->has_value() == b->has_value() && (!a->has_value() || ElementsEqual(**a, **b));
  }
  PrintCheckpointRun(dataset, args, run);
  std::fflush(stdout);
  return run.identical ? kExitOk : kExitFailure;
}

absl::StatusOr<Dataset> MakePipeline(const BenchArgs& args,
                                     std::shared_ptr<std::atomic<int64_t>> record_bytes) {
  if (args.skewed()) {
    return SkewedPipeline(args.slow_us, args.skew, args.pipeline.batch_size, args.pipeline.seed);
  }
  Pipeline counted = args.pipeline;
  counted.record_bytes = std::move(record_bytes);
  return train::recipes::ImageNetPipeline(counted);
}

// The pipeline the options describe, ending on the device when that is not the host.
absl::StatusOr<Dataset> MakeDataset(const BenchArgs& args,
                                    std::shared_ptr<std::atomic<int64_t>> record_bytes) {
  SLUICE_ASSIGN_OR_RETURN(Dataset dataset, MakePipeline(args, std::move(record_bytes)));
  if (args.device.is_cpu()) return dataset;
  SLUICE_RETURN_IF_ERROR(CheckDeviceAvailable(args.device));
  return train::data::PrefetchToDevice(dataset, args.device);
}

// One run, with AUTOTUNE unless --parallelism fixed the knobs; profiled with --profile.
absl::StatusOr<Run> RunProfiled(const Dataset& dataset, const BenchArgs& args,
                                const BenchmarkOptions& options, bool terminal) {
  // A fixed parallelism is built into the pipeline and AUTOTUNE is off;
  // otherwise the iterator runs AUTOTUNE on its kAutotune knobs.
  const int parallelism = args.pipeline.parallelism;
  std::optional<Knobs> knobs;
  if (parallelism != kAutotune) knobs = Knobs{};
  if (args.skewed() && parallelism != kAutotune) knobs->parallelism = parallelism;
  if (!args.profile.empty()) {
    SLUICE_RETURN_IF_ERROR(Prefixed("--profile: ", profiler::Start(args.profile)));
  }
  absl::StatusOr<Run> run = bench::RunOnce(dataset, options, knobs, terminal);
  if (!args.profile.empty()) {
    SLUICE_ASSIGN_OR_RETURN(profiler::Report report, Prefixed("--profile: ", profiler::Stop()));
    std::fprintf(stderr, "%s(trace: %s; TensorBoard: %s)\n", report.summary.c_str(),
                 report.trace_path.c_str(), report.tensorboard_path.c_str());
  }
  return run;
}

// Builds the pipeline and runs it once (or the grid, or the checkpoint), printing the results.
int RunBenchWith(const BenchArgs& args) {
  auto record_bytes = std::make_shared<std::atomic<int64_t>>(0);
  absl::StatusOr<Dataset> dataset = MakeDataset(args, record_bytes);
  if (!dataset.ok()) return ReportFailure("sluice bench", dataset.status(), args.json);
  BenchmarkOptions options;
  options.max_seconds = args.pipeline.epochs > 0 ? 0 : args.seconds;
  // Unbatched, an element is one image (whose first dimension is its height).
  if (args.pipeline.decode_only) {
    options.count_examples = [](const Element&) { return int64_t{1}; };
  }
  const bool terminal = isatty(2) == 1;
  if (args.checkpoint_after >= 0) return RunCheckpoint(*dataset, args, terminal);
  if (args.grid) return bench::RunGrid(*dataset, options, args.grid_seconds, args.json, terminal);
  absl::StatusOr<Run> run = RunProfiled(*dataset, args, options, terminal);
  if (!run.ok()) return ReportFailure("sluice bench", run.status(), args.json);
  if (run->result.elements == 0) {
    // An empty file or a filter that drops everything measures nothing: not a rate of 0.
    return ReportFailure("sluice bench",
                         absl::FailedPreconditionError(absl::StrCat(
                             "the pipeline ended without an element: ", dataset->DebugString())),
                         args.json);
  }
  std::optional<AutotuneReport> autotune;
  std::optional<Convergence> convergence;
  if (args.autotune_report) {
    autotune = run->report;
    if (run->report) convergence = ConvergenceOf(run->timeline);
  }
  const int64_t bytes = record_bytes->load();
  if (args.json) {
    PrintJson(args, run->result, bytes, dataset->DebugString(), autotune, convergence);
  } else {
    PrintText(run->result, bytes, dataset->DebugString(), autotune, convergence);
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
  BenchArgs args;
  if (std::optional<int> exit =
          BenchOptions().ParseOrReport(command_line, argc, argv, args, CheckBenchArgs)) {
    return *exit;
  }
  return RunBenchWith(args);
}

}  // namespace sluice::tools
