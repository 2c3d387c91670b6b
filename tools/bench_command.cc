#include "tools/bench_command.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
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
#include "core/status_macros.h"
#include "core/tensor.h"
#include "dataset/benchmark.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "tools/command_line.h"
#include "tools/image_pipeline.h"
#include "tools/json_writer.h"

namespace sluice::tools {
namespace {

std::string Padded(absl::string_view text, size_t width) {
  std::string out(text);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

std::string KnobText(int64_t value) { return value < 0 ? "-" : absl::StrCat(value); }

void PrintText(const BenchConfig& config, const BenchmarkResult& result, int64_t bytes,
               const std::string& pipeline, const std::optional<AutotuneReport>& autotune) {
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
  if (autotune) std::printf("\n%s", autotune->ToString().c_str());
}

void PrintJson(const BenchConfig& config, const BenchmarkResult& result, int64_t bytes,
               const std::string& pipeline, const std::optional<AutotuneReport>& autotune) {
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
  if (autotune) {
    json.Key("autotune");
    json.RawValue(autotune->ToJson());
  }
  json.EndObject();
  std::printf("%s\n", json.str().c_str());
}

}  // namespace

int RunBench(int argc, char** argv) {
  CommandLine command_line(
      "sluice bench",
      "Runs the ImageNet-style training input pipeline over TFRecord files of JPEGs:\n"
      "ListFiles -> Interleave(TFRecord) -> Map(parse) [-> Cache] -> Repeat ->\n"
      "Map(decode + random resized crop + random flip + normalize to float32) -> Batch ->\n"
      "Prefetch, and reports images/s, input MB/s, per-stage stats, the bottleneck (the stage\n"
      "with the highest busy time / (wall time * parallelism)) and peak RSS.");
  command_line.AddOption("files", "GLOB", "",
                         "TFRecord files of image/encoded + image/class/label; required");
  command_line.AddOption(
      "parallelism", "N", "autotune",
      "num_parallel_calls of the Maps (autotune: kAutotune, the knobs' defaults)");
  command_line.AddFlag("autotune",
                       "run the AUTOTUNE controller while benchmarking and print its report "
                       "(with kAutotune parallelism)");
  command_line.AddOption("batch", "N", "64", "batch size");
  command_line.AddOption("image-size", "N", "224", "output height and width of the crop");
  command_line.AddFlag("cache", "cache the parsed records in memory after the first epoch");
  command_line.AddOption("seconds", "S", "10", "run this long (over a repeated dataset)");
  command_line.AddOption("epochs", "E", "", "run E epochs instead of --seconds");
  command_line.AddFlag("decode-only", "the ceiling: full JPEG decode only, no crop/resize/batch");
  command_line.AddOption("seed", "S", "0", "pipeline seed");
  command_line.AddFlag("json", "print one JSON object instead of the table");
  if (std::optional<int> exit = command_line.ParseOrReport(argc, argv)) return *exit;

  BenchConfig config;
  config.files = command_line.Value("files");
  if (config.files.empty()) return command_line.ReportUsageError("--files GLOB is required");
  const std::string& parallelism = command_line.Value("parallelism");
  // Opt-in: on this project's 2-core VM the controller's choices were still
  // slower than the knobs' defaults (see the README's AUTOTUNE section).
  const bool run_controller = command_line.Flag("autotune");
  if (command_line.WasGiven("parallelism") && command_line.Flag("autotune")) {
    return command_line.ReportUsageError("give --parallelism N or --autotune, not both");
  }
  if (parallelism != "autotune" &&
      (!absl::SimpleAtoi(parallelism, &config.parallelism) || config.parallelism < 1)) {
    return command_line.ReportUsageError(
        absl::StrCat("--parallelism takes a count >= 1 or 'autotune', not '", parallelism, "'"));
  }
  auto positive = [&](const char* name, int64_t* value) {
    return absl::SimpleAtoi(command_line.Value(name), value) && *value >= 1;
  };
  if (!positive("batch", &config.batch)) {
    return command_line.ReportUsageError("--batch takes a count >= 1");
  }
  if (!positive("image-size", &config.image_size)) {
    return command_line.ReportUsageError("--image-size takes a size >= 1");
  }
  if (command_line.WasGiven("epochs")) {
    if (command_line.WasGiven("seconds")) {
      return command_line.ReportUsageError("give --seconds or --epochs, not both");
    }
    if (!positive("epochs", &config.epochs)) {
      return command_line.ReportUsageError("--epochs takes a count >= 1");
    }
  } else if (!absl::SimpleAtod(command_line.Value("seconds"), &config.seconds) ||
             !(config.seconds > 0)) {
    return command_line.ReportUsageError("--seconds takes a duration > 0");
  }
  if (!absl::SimpleAtoi(command_line.Value("seed"), &config.seed)) {
    return command_line.ReportUsageError("--seed takes an unsigned integer");
  }
  config.cache = command_line.Flag("cache");
  config.decode_only = command_line.Flag("decode-only");
  const bool json = command_line.Flag("json");

  auto record_bytes = std::make_shared<std::atomic<int64_t>>(0);
  absl::StatusOr<Dataset> dataset = BuildPipeline(config, record_bytes);
  if (!dataset.ok()) {
    std::fprintf(stderr, "sluice bench: %s\n", std::string(dataset.status().message()).c_str());
    return kExitFailure;
  }
  BenchmarkOptions options;
  options.max_seconds = config.epochs > 0 ? 0 : config.seconds;
  // Unbatched, an element is one image (whose first dimension is its height).
  if (config.decode_only) options.count_examples = [](const Element&) { return int64_t{1}; };
  const bool terminal = isatty(2) == 1;
  if (terminal) {
    options.progress = [](const BenchmarkProgress& p) {
      std::fprintf(stderr, "\r%6.1f s  %10lld images  %9.1f images/s", p.seconds,
                   static_cast<long long>(p.examples), p.seconds > 0 ? p.examples / p.seconds : 0);
      std::fflush(stderr);
    };
  }
  // With autotuned parallelism, AUTOTUNE tunes the pipeline while it runs and
  // its report says what it chose and why.
  std::unique_ptr<AutotuneController> tuner;
  if (run_controller) {
    options.on_start = [&tuner](Iterator& it) -> absl::Status {
      RETURN_IF_ERROR(it.Initialize());  // Knobs exist before any work starts.
      tuner = AutotuneController::Start(it);
      tuner->Step();
      return absl::OkStatus();
    };
  }
  absl::StatusOr<BenchmarkResult> result = RunBenchmark(*dataset, options);
  std::optional<AutotuneReport> autotune;
  if (tuner) {
    autotune = tuner->Report();
    tuner.reset();
  }
  if (terminal) std::fprintf(stderr, "\n");
  if (!result.ok()) {
    std::fprintf(stderr, "sluice bench: %s\n", std::string(result.status().message()).c_str());
    return kExitFailure;
  }
  const int64_t bytes = record_bytes->load();
  if (json) {
    PrintJson(config, *result, bytes, dataset->DebugString(), autotune);
  } else {
    PrintText(config, *result, bytes, dataset->DebugString(), autotune);
  }
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace sluice::tools
