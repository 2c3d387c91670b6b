#include "autotune/controller.h"

#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/json_writer.h"
#include "core/mutex.h"

namespace sluice {
namespace {

// `t` as the model sees it, its maximum lowered to `ceiling` (not below its minimum).
KnobState ReadKnob(const Tunable& t, int64_t ceiling = std::numeric_limits<int64_t>::max()) {
  KnobState k;
  k.present = t.present.load(std::memory_order_relaxed);
  k.autotune = t.autotune.load(std::memory_order_relaxed);
  k.value = t.value.load(std::memory_order_relaxed);
  k.min = t.min.load(std::memory_order_relaxed);
  k.max = std::max(k.min, std::min(t.max.load(std::memory_order_relaxed), ceiling));
  return k;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Bytes(double b) {
  if (b >= 1024.0 * 1024 * 1024) return absl::StrFormat("%.1f GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return absl::StrFormat("%.1f MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return absl::StrFormat("%.1f KiB", b / 1024.0);
  return absl::StrFormat("%.0f B", b);
}

std::string Knob(int64_t v) { return v < 0 ? std::string("-") : absl::StrCat(v); }

// The bytes `nodes` hold now: what the RAM budget is checked against.
int64_t HeldBytes(const std::vector<std::shared_ptr<NodeStats>>& nodes) {
  int64_t held = 0;
  for (const auto& n : nodes) held += n->buffered_bytes.load(std::memory_order_relaxed);
  return held;
}

// The knob the RAM check shrinks to free `n`'s bytes, or nullptr where none can: an autotuned
// buffer, or for a Map (no buffer knob) the results its autotuned parallelism lets it hold; not
// one at its minimum already.
Tunable* RamKnob(NodeStats& n) {
  Tunable& k = n.buffer_size.present.load() ? n.buffer_size : n.parallelism;
  if (!k.present.load() || !k.autotune.load() || k.value.load() <= k.min.load()) return nullptr;
  return &k;
}
const char* RamKnobName(const NodeStats& n) {
  return n.buffer_size.present.load() ? "buffer_size" : "parallelism";
}

// What `nodes` hold that no knob can shrink (a Shuffle's buffer, a fixed Prefetch's, a knob at
// its minimum), and the node holding the most of it.
struct UntunableBytes {
  int64_t bytes = 0;
  const NodeStats* largest = nullptr;
};
UntunableBytes Untunable(const std::vector<std::shared_ptr<NodeStats>>& nodes) {
  UntunableBytes u;
  int64_t largest = 0;
  for (const auto& n : nodes) {
    const int64_t held = n->buffered_bytes.load(std::memory_order_relaxed);
    if (held <= 0 || RamKnob(*n) != nullptr) continue;
    u.bytes += held;
    if (held > largest) {
      largest = held;
      u.largest = n.get();
    }
  }
  return u;
}

}  // namespace

int64_t RamBudgetFromMeminfo(std::istream& in) {
  std::string key;
  int64_t value = 0;
  std::string unit;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return std::max(value * 1024 / 2, kMinDefaultRamBudget);  // kB
  }
  return int64_t{1} << 30;
}

int64_t DefaultRamBudget() {
  std::ifstream in("/proc/meminfo");
  return RamBudgetFromMeminfo(in);
}

std::unique_ptr<AutotuneController> AutotuneController::Start(const Iterator& iterator,
                                                              AutotuneOptions options) {
  const IteratorContext& ctx = iterator.context();
  return Start(iterator.stats_registry(), ctx.runtime ? ctx.runtime->num_threads() : 1, ctx.options,
               options);
}

std::unique_ptr<AutotuneController> AutotuneController::Start(
    std::shared_ptr<StatsRegistry> registry, int runtime_threads, const Options& pipeline_options,
    AutotuneOptions options) {
  Budgets b;
  b.cpu = options.cpu_budget > 0                        ? options.cpu_budget
          : pipeline_options.cpu_budget.value_or(0) > 0 ? *pipeline_options.cpu_budget
                                                        : std::max(1, runtime_threads);
  b.ram_bytes = options.ram_budget > 0                        ? options.ram_budget
                : pipeline_options.ram_budget.value_or(0) > 0 ? *pipeline_options.ram_budget
                                                              : DefaultRamBudget();
  std::unique_ptr<AutotuneController> c(new AutotuneController(std::move(registry), b, options));
  c->Step();  // Budgets hold for the nodes that exist already.
  c->thread_ = std::thread([p = c.get()] { p->Loop(); });
  return c;
}

AutotuneController::AutotuneController(std::shared_ptr<StatsRegistry> registry, Budgets budgets,
                                       AutotuneOptions options)
    : registry_(std::move(registry)),
      budgets_(budgets),
      options_(options),
      start_(std::chrono::steady_clock::now()),
      interval_(options.first_interval) {}

AutotuneController::~AutotuneController() {
  {
    MutexLock l(&stop_mu_);
    stop_ = true;
  }
  stop_cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

double AutotuneController::Now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void AutotuneController::Loop() {
  pthread_setname_np(pthread_self(), "autotune");  // how profiles and debuggers show it
  auto next_step = std::chrono::steady_clock::now() + options_.first_interval;
  MutexLock l(&stop_mu_);
  while (!stop_) {
    const auto now = std::chrono::steady_clock::now();
    const auto wake = std::min(next_step, now + options_.enforce_interval);
    while (!stop_ && std::chrono::steady_clock::now() < wake) stop_cv_.WaitUntil(&stop_mu_, wake);
    if (stop_) break;
    stop_mu_.Unlock();
    if (std::chrono::steady_clock::now() >= next_step) {
      Step();
      MutexLock m(&mu_);
      next_step = std::chrono::steady_clock::now() + interval_;
    } else {
      EnforceRamBudget();
    }
    stop_mu_.Lock();
  }
}

std::vector<NodeSample> AutotuneController::Sample(
    std::vector<std::shared_ptr<NodeStats>>* nodes) const {
  *nodes = registry_->Nodes();
  std::vector<NodeSample> samples;
  std::vector<NodeStatsSnapshot> snap = registry_->Snapshot();
  for (size_t i = 0; i < nodes->size() && i < snap.size(); ++i) {
    NodeStats& n = *(*nodes)[i];
    // The model plans below the RAM check's ceilings: a plan past one would only be cut again.
    samples.push_back({snap[i], ReadKnob(n.parallelism, RamCeiling(n.name, "parallelism")),
                       ReadKnob(n.buffer_size, RamCeiling(n.name, "buffer_size")),
                       ReadKnob(n.cycle_length)});
  }
  return samples;
}

void AutotuneController::SetKnob(NodeStats& node, Tunable& knob, const char* knob_name,
                                 int64_t value, const std::string& reason) {
  if (!knob.present.load() || !knob.autotune.load()) return;
  value = std::clamp(value, knob.min.load(), knob.max.load());
  const int64_t from = knob.value.exchange(value, std::memory_order_relaxed);
  if (from == value) return;
  ++changes_;
  history_.push_back({Now(), node.name, knob_name, from, value, reason});
  if (history_.size() > kMaxHistory) {
    history_.pop_front();
    ++history_dropped_;
  }
}

bool AutotuneController::Apply(const Assignment& a, const std::string& reason) {
  const int64_t before = changes_;
  const auto nodes = registry_->Nodes();
  const auto& est = model_.nodes();
  for (size_t i = 0; i < est.size(); ++i) {
    for (const auto& n : nodes) {
      if (n->name != est[i].name) continue;
      SetKnob(*n, n->parallelism, "parallelism", a.parallelism[i], reason);
      SetKnob(*n, n->buffer_size, "buffer_size", a.buffer_size[i], reason);
      SetKnob(*n, n->cycle_length, "cycle_length", a.cycle_length[i], reason);
    }
  }
  return changes_ != before;
}

bool AutotuneController::EnforceRamBudget() {
  MutexLock l(&mu_);
  return EnforceRamLocked();
}

bool AutotuneController::EnforceRamLocked() {
  const auto nodes = registry_->Nodes();
  const int64_t observed = HeldBytes(nodes);
  peak_buffered_ = std::max(peak_buffered_, observed);
  if (observed <= budgets_.ram_bytes) return false;
  // Only the knobs' share can shrink: scaling every knob by budget / observed would cut them for
  // bytes they do not hold, and cutting them cannot bring what no knob holds within the budget.
  const UntunableBytes fixed = Untunable(nodes);
  if (fixed.largest != nullptr && fixed.bytes >= budgets_.ram_bytes) {
    WarnUntunableBytes(*fixed.largest, fixed.bytes);
    return false;
  }
  // Shrink every autotuned buffer in proportion, so that once the consumer
  // drains what is held the buffers fit.
  const double factor = static_cast<double>(budgets_.ram_bytes - fixed.bytes) /
                        static_cast<double>(observed - fixed.bytes);
  const std::string reason =
      absl::StrCat("RAM budget: ", Bytes(static_cast<double>(observed)), " buffered > ",
                   Bytes(static_cast<double>(budgets_.ram_bytes)));
  const int64_t before = changes_;
  for (const auto& n : nodes) {
    Tunable* b = RamKnob(*n);
    if (b == nullptr || n->buffered_bytes.load() == 0) continue;
    const int64_t v = b->value.load();
    const int64_t cut = std::min<int64_t>(v - 1, static_cast<int64_t>(std::floor(v * factor)));
    SetKnob(*n, *b, RamKnobName(*n), cut, reason);
    ram_ceiling_[{n->name, RamKnobName(*n)}] = b->value.load();
  }
  if (changes_ == before) return false;
  interval_ = options_.first_interval;
  ram_quiet_steps_ = 0;
  return true;
}

void AutotuneController::WarnUntunableBytes(const NodeStats& largest, int64_t untunable) {
  if (warned_untunable_) return;
  warned_untunable_ = true;
  const int64_t held = largest.buffered_bytes.load(std::memory_order_relaxed);
  std::string w = absl::StrCat("RAM budget ", Bytes(static_cast<double>(budgets_.ram_bytes)),
                               " cannot be met: ", largest.name, held == untunable ? " alone" : "",
                               " holds ", Bytes(static_cast<double>(held)));
  if (held != untunable) {
    absl::StrAppend(&w, " of the ", Bytes(static_cast<double>(untunable)),
                    " that no autotuned knob holds");
  }
  absl::StrAppend(&w, "; AUTOTUNE keeps its knobs' bytes where they are rather than cut them");
  std::fprintf(stderr, "sluice: warning: %s\n", w.c_str());
  warnings_.push_back(std::move(w));
}

void AutotuneController::ExpireRamCeilings(const std::vector<std::shared_ptr<NodeStats>>& nodes) {
  constexpr int64_t kRamCeilingQuietSteps = 20;
  if (ram_ceiling_.empty()) return;
  ram_quiet_steps_ = 2 * HeldBytes(nodes) <= budgets_.ram_bytes ? ram_quiet_steps_ + 1 : 0;
  if (ram_quiet_steps_ < kRamCeilingQuietSteps) return;
  ram_ceiling_.clear();
  ram_quiet_steps_ = 0;
}

int64_t AutotuneController::RamCeiling(const std::string& node, const std::string& knob) const {
  auto it = ram_ceiling_.find({node, knob});
  return it == ram_ceiling_.end() ? std::numeric_limits<int64_t>::max() : it->second;
}

Budgets AutotuneController::PlanningBudgets(
    const std::vector<std::shared_ptr<NodeStats>>& nodes) const {
  Budgets b = budgets_;
  const auto& est = model_.nodes();
  for (const auto& n : nodes) {
    auto e = std::find_if(est.begin(), est.end(),
                          [&](const NodeEstimate& x) { return x.name == n->name; });
    if (e == est.end() || !SizesBuffer(*e)) {
      b.fixed_bytes += n->buffered_bytes.load(std::memory_order_relaxed);
    }
  }
  if (b.ram_bytes > 0 && Untunable(nodes).bytes >= b.ram_bytes) {
    b.ram_bytes =
        b.fixed_bytes + model_.Predict(model_.Current(), static_cast<double>(b.cpu)).buffered_bytes;
  }
  return b;
}

bool AutotuneController::DeepenUnderrunBuffers(const std::vector<std::shared_ptr<NodeStats>>& nodes,
                                               int64_t now_ns, bool allowed,
                                               const Budgets& budgets) {
  // Several underruns in one interval, and a consumer that spent a share of it in GetNext: one
  // stall of the producer empties any buffer once.
  constexpr int64_t kMinUnderruns = 2;
  constexpr double kMinWaitShare = 0.02;
  const double dt_ns = static_cast<double>(now_ns - underrun_prev_ns_);
  const bool measured = underrun_prev_ns_ != 0 && dt_ns > 0;
  underrun_prev_ns_ = now_ns;
  const double cpu = static_cast<double>(budgets_.cpu);
  const auto& est = model_.nodes();
  // One assignment for every node deepened in this step, so that two buffers together stay
  // within the RAM budget.
  Assignment a = model_.Current();
  int64_t observed = HeldBytes(nodes);
  bool changed = false;
  for (const auto& n : nodes) {
    // The counts move on every step, also when this one deepens nothing (after a RAM cut, say),
    // so that the next step sees only its own interval.
    const UnderrunCount now{n->underruns.load(std::memory_order_relaxed),
                            n->wait_ns.load(std::memory_order_relaxed)};
    auto [prev, first] = underrun_prev_.try_emplace(n->name, now);
    const UnderrunCount before = prev->second;
    prev->second = now;
    Tunable& knob = n->buffer_size;
    if (!allowed || first || !measured || !knob.present.load() || !knob.autotune.load()) continue;
    const int64_t underruns = now.underruns - before.underruns;
    // A wait is counted when it ends, whole: one begun in the last interval may take this one's
    // share past 1, which it cannot be.
    const double wait_share =
        std::min(1.0, static_cast<double>(now.wait_ns - before.wait_ns) / dt_ns);
    const int64_t from = knob.value.load();
    // Never above what the RAM check last cut the buffer to: doubling back would only be cut
    // again.
    const int64_t ceiling = std::min(knob.max.load(), RamCeiling(n->name, "buffer_size"));
    if (underruns < kMinUnderruns || wait_share < kMinWaitShare || from >= ceiling) continue;
    // Only top-level nodes the model has measured: their bytes per element bound the growth.
    size_t i = 0;
    while (i < est.size() && est[i].name != n->name) ++i;
    if (i == est.size() || !est[i].measured) continue;
    int64_t to = std::min(2 * from, ceiling);
    for (; to > from; --to) {
      a.buffer_size[i] = to;
      const double more = static_cast<double>(to - from) * est[i].bytes_per_element;
      if (budgets.ram_bytes <= 0 ||
          (model_.Predict(a, cpu).buffered_bytes + budgets.fixed_bytes <= budgets.ram_bytes &&
           static_cast<double>(observed) + more <= static_cast<double>(budgets_.ram_bytes))) {
        break;
      }
    }
    a.buffer_size[i] = to;
    if (to == from) continue;
    observed += static_cast<int64_t>(static_cast<double>(to - from) * est[i].bytes_per_element);
    SetKnob(*n, knob, "buffer_size", to,
            absl::StrFormat("the consumer found the buffer empty %d times after it had filled, "
                            "in GetNext %.0f%% of the time: too shallow for the hand-offs",
                            underruns, 100 * wait_share));
    changed = true;
  }
  return changed;
}

void AutotuneController::Step() {
  MutexLock l(&mu_);
  ++steps_;
  std::vector<std::shared_ptr<NodeStats>> nodes;
  const int64_t now_ns = NowNs();
  model_.Update(Sample(&nodes), now_ns);
  ExpireRamCeilings(nodes);
  const bool shrunk = EnforceRamLocked();
  // tf.data's prefetch autotuner: a buffer that fills and then runs dry under its consumer, again
  // and again, is too shallow for the hand-offs between the two threads, whatever the producer's
  // pace, which is all the model sees: it doubles (not in a step that cut buffers for RAM).
  const bool deepened =
      DeepenUnderrunBuffers(nodes, now_ns, /*allowed=*/!shrunk, PlanningBudgets(nodes));
  if (shrunk || deepened) {
    // The changed knobs, at the same time: no interval of a few microseconds to measure.
    model_.Update(Sample(&nodes), now_ns);
  }
  const Budgets budgets = PlanningBudgets(nodes);

  const Assignment current = model_.Current();
  const double cpu = static_cast<double>(budgets_.cpu);
  last_current_ = model_.Predict(current, cpu);
  // No single stage may have more workers than the budget: they could all be
  // busy at once. (Idle workers of other stages cost nothing, so the sum over
  // stages is not limited; the model spreads the work over the budget.)
  const auto& est = model_.nodes();
  Assignment capped = current;
  for (size_t i = 0; i < est.size(); ++i) {
    if (est[i].parallelism.autotune && est[i].kind != NodeKind::kSync &&
        est[i].kind != NodeKind::kSource) {
      capped.parallelism[i] = std::min<int64_t>(capped.parallelism[i], budgets_.cpu);
    }
  }
  bool changed = shrunk || deepened;
  if (!model_.ready()) {
    // No costs measured yet: only bring the knobs within the CPU budget.
    if (!(capped == current)) {
      changed |=
          Apply(capped, absl::StrCat("CPU budget ", budgets_.cpu, " (no costs measured yet)"));
    }
    last_plan_ = Plan{capped, model_.Predict(capped, cpu), BottleneckKind::kUnknown};
  } else {
    Plan plan = model_.Optimize(budgets);
    const bool ram_over = last_current_.buffered_bytes + budgets.fixed_bytes > budgets.ram_bytes;
    const bool over = !(capped == current) || ram_over;
    // Buffers are shrunk only for RAM: the climb starts every buffer at its minimum, and applying
    // its plan for another knob would otherwise undo a buffer deepened for its underruns.
    if (!ram_over) {
      Assignment floored = plan.assignment;
      for (size_t i = 0; i < est.size() && i < floored.buffer_size.size(); ++i) {
        if (est[i].buffer_size.autotune) {
          floored.buffer_size[i] = std::max(floored.buffer_size[i], current.buffer_size[i]);
        }
      }
      if (!(floored == plan.assignment)) {
        const Prediction p = model_.Predict(floored, cpu);
        if (p.buffered_bytes + budgets.fixed_bytes <= budgets.ram_bytes) {
          plan = Plan{floored, p, plan.bottleneck_kind};
        }
      }
    }
    const double gain = last_current_.throughput > 0
                            ? plan.prediction.throughput / last_current_.throughput - 1
                            : 0;
    // Fewer workers where the plan has fewer, if the model says that loses under 2% (growing
    // needs min_gain, so the two never alternate): an early step, taken on the first few noisy
    // costs, may have overshot, and idle workers only take CPU from the rest of the pipeline.
    // Buffers are not shrunk here; the RAM budget does that.
    Assignment leaner = current;
    for (size_t i = 0; i < leaner.parallelism.size() && i < plan.assignment.parallelism.size();
         ++i) {
      leaner.parallelism[i] = std::min(leaner.parallelism[i], plan.assignment.parallelism[i]);
    }
    const Prediction leaner_prediction = model_.Predict(leaner, cpu);
    // Not in the first steps: their costs rest on a handful of elements, and shrinking on them
    // would only undo the start.
    constexpr int64_t kFirstShrinkStep = 5;
    const bool shrink = steps_ >= kFirstShrinkStep && !over && !(leaner == current) &&
                        gain <= options_.min_gain && last_current_.throughput > 0 &&
                        leaner_prediction.throughput >= 0.98 * last_current_.throughput;
    if (shrink) {
      changed |=
          Apply(leaner, absl::StrFormat("as fast with fewer workers: modelled throughput "
                                        "%.0f/s -> %.0f/s",
                                        last_current_.throughput, leaner_prediction.throughput));
      last_current_ = leaner_prediction;
    } else if (!(plan.assignment == current) && (over || gain > options_.min_gain)) {
      const std::string reason =
          over ? absl::StrCat(
                     "over budget (cpu ", budgets_.cpu, ", ram ",
                     Bytes(static_cast<double>(last_current_.buffered_bytes + budgets.fixed_bytes)),
                     "/", Bytes(static_cast<double>(budgets.ram_bytes)), ")")
               : absl::StrFormat("modelled throughput %.0f/s -> %.0f/s", last_current_.throughput,
                                 plan.prediction.throughput);
      changed |= Apply(plan.assignment, reason);
      last_current_ = plan.prediction;
    }
    last_plan_ = plan;
  }
  // Act often while things change, then back off.
  interval_ =
      changed || !model_.ready()
          ? options_.first_interval
          : std::min(options_.max_interval, std::chrono::milliseconds(interval_.count() * 2));
}

AutotuneReport AutotuneController::Report() const {
  MutexLock l(&mu_);
  AutotuneReport r;
  r.elapsed_s = Now();
  r.steps = steps_;
  r.cpu_budget = budgets_.cpu;
  r.ram_budget = budgets_.ram_bytes;
  r.history.assign(history_.begin(), history_.end());
  r.history_dropped = history_dropped_;
  r.warnings = warnings_;
  r.peak_observed_buffered_bytes = peak_buffered_;
  const auto& est = model_.nodes();
  // The model's view of the values now in force.
  const Prediction cur = model_.Predict(model_.Current(), static_cast<double>(budgets_.cpu));
  r.modelled_throughput = cur.throughput;
  r.predicted_buffered_bytes = cur.buffered_bytes;
  if (!est.empty()) {
    r.observed_throughput = est.back().observed_rate;
    r.consumer_us = est.back().consumer_ns / 1e3;
  }
  r.bottleneck_kind = last_plan_.bottleneck_kind;
  // Named from the same plan as its kind (the values the model wants).
  const int b = last_plan_.prediction.bottleneck;
  if (model_.ready() && b >= 0) {
    r.bottleneck = b < static_cast<int>(est.size()) ? est[b].name : std::string("consumer");
  }
  for (size_t i = 0; i < est.size(); ++i) {
    const NodeEstimate& n = est[i];
    StageReport s;
    s.name = n.name;
    s.kind = n.kind;
    s.parallelism = n.parallelism.present ? n.parallelism.value : -1;
    s.buffer_size = n.buffer_size.present ? n.buffer_size.value : -1;
    s.cycle_length = n.cycle_length.present ? n.cycle_length.value : -1;
    s.self_us = n.self_ns / 1e3;
    s.input_ratio = model_.InputsOf(i).size() == 1 ? n.input_ratio : 0;
    s.bytes_per_element = n.bytes_per_element;
    s.modelled_rate = i < cur.node_rate.size() ? cur.node_rate[i] : 0;
    s.observed_rate = n.observed_rate;
    s.buffered_bytes = n.buffered_bytes;
    s.active_workers = n.active_workers;
    r.stages.push_back(std::move(s));
  }
  return r;
}

std::string AutotuneReport::ToString() const {
  std::string out = absl::StrFormat(
      "AUTOTUNE after %.2f s, %d steps; budgets: cpu %d, ram %s\n"
      "output elements (batches where it batches): modelled %.1f/s, observed %.1f/s; consumer "
      "%.1f us/element; bottleneck: %s (%s)\n"
      "buffered: predicted %s, peak observed %s\n",
      elapsed_s, steps, cpu_budget, Bytes(static_cast<double>(ram_budget)), modelled_throughput,
      observed_throughput, consumer_us, bottleneck.empty() ? std::string("-") : bottleneck,
      BottleneckKindName(bottleneck_kind), Bytes(static_cast<double>(predicted_buffered_bytes)),
      Bytes(static_cast<double>(peak_observed_buffered_bytes)));
  // As wide as the longest name ("Zip[3].1:Map[1]" and the like), at least 14.
  int width = 14;
  for (const StageReport& s : stages) width = std::max(width, static_cast<int>(s.name.size()));
  absl::StrAppendFormat(&out, "%-*s %-10s %4s %4s %4s %11s %6s %10s %11s %11s %10s %3s\n", width,
                        "node", "kind", "par", "buf", "cyc", "self/elem", "ratio", "bytes/elem",
                        "modelled/s", "observed/s", "buffered", "act");
  for (const StageReport& s : stages) {
    absl::StrAppendFormat(
        &out, "%-*s %-10s %4s %4s %4s %8.1f us %6.2f %10s %11.1f %11.1f %10s %3d\n", width, s.name,
        NodeKindName(s.kind), Knob(s.parallelism), Knob(s.buffer_size), Knob(s.cycle_length),
        s.self_us, s.input_ratio, Bytes(s.bytes_per_element), s.modelled_rate, s.observed_rate,
        Bytes(static_cast<double>(s.buffered_bytes)), s.active_workers);
  }
  absl::StrAppend(&out, "history:\n");
  if (history.empty()) absl::StrAppend(&out, "  (no changes)\n");
  if (history_dropped > 0) {
    absl::StrAppendFormat(&out, "  (%d earlier changes dropped)\n", history_dropped);
  }
  for (const KnobChange& c : history) {
    absl::StrAppendFormat(&out, "  t=%7.3fs %-14s %-12s %3d -> %-3d %s\n", c.time_s, c.node, c.knob,
                          c.from, c.to, c.reason);
  }
  for (const std::string& w : warnings) absl::StrAppend(&out, "warning: ", w, "\n");
  return out;
}

std::string AutotuneReport::ToJson() const {
  JsonWriter w;
  auto number = [&w](absl::string_view key, double v) {
    w.Key(key);
    w.Double(v);
  };
  auto integer = [&w](absl::string_view key, int64_t v) {
    w.Key(key);
    w.Int(v);
  };
  auto string = [&w](absl::string_view key, absl::string_view v) {
    w.Key(key);
    w.String(v);
  };
  w.BeginObject();
  number("elapsed_s", elapsed_s);
  integer("steps", steps);
  integer("cpu_budget", cpu_budget);
  integer("ram_budget", ram_budget);
  number("modelled_throughput", modelled_throughput);
  number("observed_throughput", observed_throughput);
  number("consumer_us", consumer_us);
  integer("predicted_buffered_bytes", predicted_buffered_bytes);
  integer("peak_observed_buffered_bytes", peak_observed_buffered_bytes);
  string("bottleneck", bottleneck);
  string("bottleneck_kind", BottleneckKindName(bottleneck_kind));
  w.Key("stages");
  w.BeginArray();
  for (const StageReport& s : stages) {
    w.BeginObject();
    string("name", s.name);
    string("kind", NodeKindName(s.kind));
    integer("parallelism", s.parallelism);
    integer("buffer_size", s.buffer_size);
    integer("cycle_length", s.cycle_length);
    number("self_us", s.self_us);
    number("input_ratio", s.input_ratio);
    number("bytes_per_element", s.bytes_per_element);
    number("modelled_rate", s.modelled_rate);
    number("observed_rate", s.observed_rate);
    integer("buffered_bytes", s.buffered_bytes);
    integer("active_workers", s.active_workers);
    w.EndObject();
  }
  w.EndArray();
  w.Key("history");
  w.BeginArray();
  for (const KnobChange& c : history) {
    w.BeginObject();
    number("time_s", c.time_s);
    string("node", c.node);
    string("knob", c.knob);
    integer("from", c.from);
    integer("to", c.to);
    string("reason", c.reason);
    w.EndObject();
  }
  w.EndArray();
  integer("history_dropped", history_dropped);
  w.Key("warnings");
  w.BeginArray();
  for (const std::string& warning : warnings) w.String(warning);
  w.EndArray();
  w.EndObject();
  return w.str();
}

}  // namespace sluice
