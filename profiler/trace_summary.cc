#include "profiler/trace_summary.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice::profiler {
namespace {

struct OpenSpan {
  const TraceEvent* event;
  int64_t end;
  int64_t self;
};

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// Ops by (category, name, track).
using OpTable = std::map<std::tuple<std::string, std::string, std::string>, TraceStats::Op>;

// The steps' window, for the devices' utilisation; empty (begin > end) without steps.
struct StepWindow {
  int64_t begin = std::numeric_limits<int64_t>::max();
  int64_t end = 0;
  bool empty() const { return end <= begin; }
};

// Adds `t`'s spans to `ops`, each with its time less its children's, and widens `steps` to its
// steps.
void AddSpans(const ThreadTrace& t, OpTable& ops, StepWindow& steps) {
  // Host threads' ops add up across threads; a device track's are its own.
  const std::string track = t.tid >= kFirstTrackTid ? t.name : "";
  std::vector<const TraceEvent*> spans;
  for (const TraceEvent& e : t.events) {
    if (e.counter) continue;
    spans.push_back(&e);
    if (std::string_view(e.category) == "step" && std::string_view(e.name) == "step") {
      steps.begin = std::min(steps.begin, e.start_ns);
      steps.end = std::max(steps.end, e.start_ns + e.dur_ns);
    }
  }
  // Parents before their children: earlier start first, longer first at the same start.
  std::sort(spans.begin(), spans.end(), [](const TraceEvent* a, const TraceEvent* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->dur_ns > b->dur_ns;
  });
  std::vector<OpenSpan> open;
  auto close = [&](const OpenSpan& s) {
    TraceStats::Op& op = ops[{s.event->category, s.event->name, track}];
    op.category = s.event->category;
    op.track = track;
    op.name = s.event->name;
    ++op.count;
    op.total_ns += s.event->dur_ns;
    op.self_ns += s.self;
  };
  for (const TraceEvent* e : spans) {
    while (!open.empty() && open.back().end <= e->start_ns) {
      close(open.back());
      open.pop_back();
    }
    if (!open.empty()) open.back().self -= e->dur_ns;
    open.push_back({e, e->start_ns + e->dur_ns, e->dur_ns});
  }
  while (!open.empty()) {
    close(open.back());
    open.pop_back();
  }
}

// A device track's busy time: the union of its spans within the steps' window (or, without
// steps, its own spans' first start to last end); nullopt for a track with no spans.
std::optional<TraceStats::Device> DeviceBusy(const ThreadTrace& t, const StepWindow& steps) {
  const bool has_steps = !steps.empty();
  std::vector<std::pair<int64_t, int64_t>> spans;  // [start, end), clipped to the window
  int64_t first = std::numeric_limits<int64_t>::max(), last = 0;
  for (const TraceEvent& e : t.events) {
    if (e.counter) continue;
    int64_t begin = e.start_ns, end = e.start_ns + e.dur_ns;
    first = std::min(first, begin);
    last = std::max(last, end);
    if (has_steps) {
      begin = std::max(begin, steps.begin);
      end = std::min(end, steps.end);
    }
    if (end > begin) spans.emplace_back(begin, end);
  }
  if (first > last) return std::nullopt;
  TraceStats::Device d{.track = t.name,
                       .spans = static_cast<int64_t>(t.events.size()),
                       .window_ns = has_steps ? steps.end - steps.begin : last - first};
  std::sort(spans.begin(), spans.end());
  int64_t covered_to = std::numeric_limits<int64_t>::min();
  for (const auto& [begin, end] : spans) {
    const int64_t from = std::max(begin, covered_to);
    if (end > from) d.busy_ns += end - from;
    covered_to = std::max(covered_to, end);
  }
  return d;
}

// Lists the ops in `stats` and adds up what the summary reads from them: the steps, their
// phases and the pipeline nodes' own work.
void AddOps(const OpTable& ops, TraceStats& stats) {
  std::map<std::string, int64_t> node_work;  // own work per pipeline node, wherever it ran
  for (auto& [key, op] : ops) {
    const auto& [category, name, track] = key;
    if (category == "step" && name == "step") {
      stats.steps += op.count;
      stats.step_ns += op.total_ns;
    } else if (category == "phase") {
      if (name == "input") stats.input_ns += op.total_ns;
      if (name == "forward") stats.forward_ns += op.total_ns;
      if (name == "loss") stats.loss_ns += op.total_ns;
      if (name == "backward") stats.backward_ns += op.total_ns;
      if (name == "forward_backward") stats.forward_backward_ns += op.total_ns;
      if (name == "optimizer") stats.optimizer_ns += op.total_ns;
      if (name == "metrics") stats.metrics_ns += op.total_ns;
      if (name == "device_wait") stats.device_wait_ns += op.total_ns;
    } else if (category == "pipeline") {
      node_work[name] += op.self_ns;  // waits on workers are child spans: not in self
    } else if (category == "map" && absl::EndsWith(name, " call")) {
      node_work[name.substr(0, name.size() - 5)] += op.total_ns;  // calls on worker threads
    }
    stats.ops.push_back(op);
  }
  for (const auto& [node, work] : node_work) {
    if (work > stats.slowest_node_self_ns) {
      stats.slowest_node = node;
      stats.slowest_node_self_ns = work;
    }
  }
}

}  // namespace

TraceStats ComputeStats(const std::vector<ThreadTrace>& threads) {
  TraceStats stats;
  OpTable ops;
  StepWindow steps;
  for (const ThreadTrace& t : threads) AddSpans(t, ops, steps);
  for (const ThreadTrace& t : threads) {
    if (t.tid < kFirstTrackTid) continue;
    if (std::optional<TraceStats::Device> d = DeviceBusy(t, steps)) {
      stats.devices.push_back(std::move(*d));
    }
  }
  AddOps(ops, stats);
  stats.other_ns =
      std::max<int64_t>(0, stats.step_ns - stats.input_ns - stats.forward_ns - stats.loss_ns -
                               stats.backward_ns - stats.forward_backward_ns - stats.optimizer_ns -
                               stats.metrics_ns - stats.device_wait_ns);
  std::sort(
      stats.ops.begin(), stats.ops.end(),
      [](const TraceStats::Op& a, const TraceStats::Op& b) { return a.total_ns > b.total_ns; });
  return stats;
}

std::string Summarize(const std::vector<ThreadTrace>& threads, int64_t dropped) {
  const TraceStats s = ComputeStats(threads);
  std::string out = "Profile summary\n";
  if (dropped > 0) {
    absl::StrAppend(&out, "  ", dropped,
                    " events were dropped (a thread's ring buffer filled; raise "
                    "events_per_thread or profile fewer steps)\n");
  }
  absl::StrAppend(&out,
                  "Top ops by total time (forward per layer, backward per op, "
                  "optimizer, all-reduce, callbacks, checkpoints):\n");
  int shown = 0;
  for (const TraceStats::Op& op : s.ops) {
    if (op.category == "step" || op.category == "phase" || op.category == "pipeline" ||
        op.category == "counter" || op.category == "kernel" || shown >= 10) {
      continue;
    }
    absl::StrAppendFormat(&out, "  %-10s %-36s %8d calls %10.2f ms total %10.2f ms self\n",
                          op.category, op.name, op.count, Ms(op.total_ns), Ms(op.self_ns));
    ++shown;
  }
  if (shown == 0) absl::StrAppend(&out, "  (none recorded)\n");
  if (s.steps > 0) {
    const double step = static_cast<double>(s.step_ns);
    absl::StrAppendFormat(&out, "Step time: %d steps, %.2f ms each:", s.steps,
                          Ms(s.step_ns) / static_cast<double>(s.steps));
    // An eager step has forward, loss, backward, optimizer and metrics phases; a compiled one
    // replays them as one (the optimizer outside it only where clipping keeps it eager).
    const bool compiled = s.forward_backward_ns > 0 && s.forward_ns == 0;
    std::vector<std::pair<const char*, int64_t>> phases = {{"input", s.input_ns}};
    if (compiled) {
      phases.push_back({"step (replayed)", s.forward_backward_ns});
    } else {
      phases.push_back({"forward", s.forward_ns});
      phases.push_back({"loss", s.loss_ns});
      phases.push_back({"backward", s.backward_ns});
    }
    phases.push_back({"optimizer", s.optimizer_ns});
    phases.push_back({"metrics", s.metrics_ns});
    // A device wait only where there is a device that the host waits for.
    if (s.device_wait_ns > 0) phases.push_back({"device wait", s.device_wait_ns});
    phases.push_back({"other", s.other_ns});
    for (size_t i = 0; i < phases.size(); ++i) {
      absl::StrAppendFormat(&out, "%s %s %.1f%%", i == 0 ? "" : ",", phases[i].first,
                            100 * static_cast<double>(phases[i].second) / step);
    }
    absl::StrAppend(&out, "\n");
  }
  for (const TraceStats::Device& d : s.devices) {
    absl::StrAppendFormat(
        &out,
        "Device %s: busy %.1f%% of the %s (%.2f of %.2f ms, %d kernel spans "
        "timed by CUDA events); top ops by device time:\n",
        d.track,
        d.window_ns > 0 ? 100.0 * static_cast<double>(d.busy_ns) / static_cast<double>(d.window_ns)
                        : 0.0,
        s.steps > 0 ? "steps' time" : "time its kernels span", Ms(d.busy_ns), Ms(d.window_ns),
        d.spans);
    int kernels_shown = 0;
    for (const TraceStats::Op& op : s.ops) {
      if (op.category != "kernel" || op.track != d.track || kernels_shown >= 10) continue;
      absl::StrAppendFormat(&out, "  %-47s %8d calls %10.2f ms\n", op.name, op.count,
                            Ms(op.total_ns));
      ++kernels_shown;
    }
  }
  if (!s.slowest_node.empty()) {
    absl::StrAppendFormat(&out, "Slowest pipeline node: %s (%.2f ms of its own work)\n",
                          s.slowest_node, Ms(s.slowest_node_self_ns));
  }
  if (s.steps > 0) {
    const double input_share = static_cast<double>(s.input_ns) / static_cast<double>(s.step_ns);
    // A device that is busy nearly all the steps' time sets the pace: the host, which only
    // queues its work, then waits wherever it next blocks, often on input whose copies queue
    // behind the device's kernels. So that wait is the device's, not the input's.
    const auto share = [](const TraceStats::Device& x) {
      return static_cast<double>(x.busy_ns) / static_cast<double>(x.window_ns);
    };
    const TraceStats::Device* busiest = nullptr;
    for (const TraceStats::Device& d : s.devices) {
      if (d.window_ns > 0 && share(d) >= 0.9 &&
          (busiest == nullptr || share(d) > share(*busiest))) {
        busiest = &d;
      }
    }
    if (busiest != nullptr) {
      absl::StrAppendFormat(&out,
                            "Verdict: device-bound: %s is busy %.1f%% of the step time (the host "
                            "waits for it, %.1f%% of the step in input)\n",
                            busiest->track, 100 * share(*busiest), 100 * input_share);
    } else {
      // The TF profiler's thresholds: over 20% of the step waiting for input is input-bound.
      const char* verdict = input_share > 0.20   ? "input-bound"
                            : input_share > 0.05 ? "moderately input-bound"
                                                 : "compute-bound";
      absl::StrAppendFormat(&out, "Verdict: %s: %.1f%% of the step time waits for input\n", verdict,
                            100 * input_share);
    }
  } else {
    absl::StrAppend(&out, "Verdict: no training steps recorded (a pipeline-only profile)\n");
  }
  return out;
}

}  // namespace sluice::profiler
