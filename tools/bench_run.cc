#include "tools/bench_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "core/status_macros.h"
#include "dataset/iterator.h"
#include "dataset/options.h"

namespace sluice::tools::bench {
namespace {

// A node of this kind outside every inner pipeline, on any input of a Zip and the like
// ("Zip[2].1:Map[1]").
bool IsTopLevelNode(const std::string& name, absl::string_view kind) {
  if (name.find('/') != std::string::npos) return false;
  const size_t colon = name.rfind(':');
  const absl::string_view base = colon == std::string::npos
                                     ? absl::string_view(name)
                                     : absl::string_view(name).substr(colon + 1);
  return absl::StartsWith(base, absl::StrCat(kind, "["));
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

}  // namespace

Convergence ConvergenceOf(const Timeline& t, size_t window, double fraction) {
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

std::string ReportJson(const BenchmarkResult& result, int64_t batches, int64_t bytes,
                       const std::string& pipeline, const std::string& device,
                       const std::optional<AutotuneReport>& autotune,
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
  json.Int(batches);
  json.Key("bytes");
  json.Int(bytes);
  json.Key("seconds");
  json.Double(result.seconds);
  json.Key("pipeline");
  json.String(pipeline);
  json.Key("device");
  json.String(device);
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
    json.Key("underruns");
    json.Int(s.underruns);
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
  return json.str();
}

}  // namespace sluice::tools::bench
