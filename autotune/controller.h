#ifndef SLUICE_AUTOTUNE_CONTROLLER_H_
#define SLUICE_AUTOTUNE_CONTROLLER_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <istream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "autotune/model.h"
#include "core/mutex.h"
#include "dataset/iterator.h"
#include "dataset/node_stats.h"
#include "dataset/options.h"

namespace sluice {

struct AutotuneOptions {
  // 0: the pipeline's Options::cpu_budget, else the runtime's threads.
  int cpu_budget = 0;
  // 0: the pipeline's Options::ram_budget, else half of MemAvailable.
  int64_t ram_budget = 0;
  // The first step comes this soon; the interval then doubles up to
  // max_interval, and drops back after every change.
  std::chrono::milliseconds first_interval{10};
  std::chrono::milliseconds max_interval{2000};
  // How often the observed buffered bytes are checked against ram_budget.
  std::chrono::milliseconds enforce_interval{5};
  // Hysteresis: a new assignment is applied only when it raises modelled
  // throughput by this fraction (or the current one breaks a budget).
  double min_gain = 0.05;
};

// One knob change the controller made.
struct KnobChange {
  double time_s = 0;  // since the controller started
  std::string node;
  std::string knob;  // "parallelism", "buffer_size", "cycle_length"
  int64_t from = 0, to = 0;
  std::string reason;
};

// One top-level node as the controller last saw it.
struct StageReport {
  std::string name;
  NodeKind kind = NodeKind::kSync;
  int64_t parallelism = -1, buffer_size = -1, cycle_length = -1;  // -1: no such knob
  double self_us = 0;                                             // own work per element
  double input_ratio = 0;  // input elements per output element
  double bytes_per_element = 0;
  double modelled_rate = 0;  // elements/s
  double observed_rate = 0;  // elements/s over the last interval
  int64_t buffered_bytes = 0;
  int64_t active_workers = 0;
};

struct AutotuneReport {
  double elapsed_s = 0;
  int64_t steps = 0;
  int64_t cpu_budget = 0;
  int64_t ram_budget = 0;
  double modelled_throughput = 0;  // root elements/s under the current values
  double observed_throughput = 0;  // root elements/s over the last interval
  // The caller's own time per root element, between its GetNext calls, as the model measures it:
  // a consumer as slow as the pipeline makes buffer slots (a parallel Map's workers among them)
  // worth having.
  double consumer_us = 0;
  int64_t predicted_buffered_bytes = 0;
  int64_t peak_observed_buffered_bytes = 0;  // over every RAM check
  std::string bottleneck;                    // node name, "consumer" or ""
  BottleneckKind bottleneck_kind = BottleneckKind::kUnknown;
  std::vector<StageReport> stages;
  // In time order: the last kMaxHistory changes, after `history_dropped` older ones.
  std::vector<KnobChange> history;
  int64_t history_dropped = 0;
  // What the knobs cannot fix, each said once (also on stderr): bytes that no autotuned knob
  // holds (a Shuffle's buffer, say) above the RAM budget by themselves.
  std::vector<std::string> warnings;

  std::string ToString() const;  // a readable table
  std::string ToJson() const;
};

// Tunes the kAutotune knobs of one pipeline from a background thread: reads
// the nodes' stats, updates a Model, and moves the knobs to the values the
// model's hill climbing picks within the CPU and RAM budgets. It also shrinks
// buffers at once whenever the observed buffered bytes exceed the RAM budget.
// Destroying it stops and joins the thread; knobs keep their last values.
class AutotuneController : public IteratorTuner {
 public:
  // The report keeps this many knob changes, the latest: memory stays bounded however long the
  // controller runs.
  static constexpr size_t kMaxHistory = 1000;

  // Tunes `iterator`'s pipeline. Iterators start one of their own (see
  // Iterator); call this on an iterator whose Options::autotune is false, to
  // tune with other AutotuneOptions. The controller shares the pipeline's stats
  // registry, so it may outlive the iterator (it then tunes nothing).
  // Budgets default from the pipeline's Options. Nodes are made at the
  // iterator's first GetNext (or Save/Restore); the controller picks up nodes
  // whenever they appear, and Step() applies the budgets at once.
  static std::unique_ptr<AutotuneController> Start(const Iterator& iterator,
                                                   AutotuneOptions options = {});
  // Tunes the nodes registered in `registry`, whose runtime has
  // `runtime_threads` threads.
  static std::unique_ptr<AutotuneController> Start(std::shared_ptr<StatsRegistry> registry,
                                                   int runtime_threads,
                                                   const Options& pipeline_options,
                                                   AutotuneOptions options = {});
  ~AutotuneController() override;
  AutotuneController(const AutotuneController&) = delete;
  AutotuneController& operator=(const AutotuneController&) = delete;

  // One tuning step now (the thread calls it; Iterator may call it once its
  // nodes exist so that the budgets hold from the first element).
  void Step() ABSL_LOCKS_EXCLUDED(mu_);
  // Shrinks autotuned buffers if the observed buffered bytes exceed the RAM
  // budget; true when it changed something.
  bool EnforceRamBudget() ABSL_LOCKS_EXCLUDED(mu_);

  AutotuneReport Report() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t cpu_budget() const { return budgets_.cpu; }
  int64_t ram_budget() const { return budgets_.ram_bytes; }

 private:
  AutotuneController(std::shared_ptr<StatsRegistry> registry, Budgets budgets,
                     AutotuneOptions options);
  void Loop() ABSL_LOCKS_EXCLUDED(mu_, stop_mu_);
  std::vector<NodeSample> Sample(std::vector<std::shared_ptr<NodeStats>>* nodes) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool EnforceRamLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The budgets the model plans within: the observed bytes of the nodes whose buffers it does
  // not size count as held whatever the knobs (Budgets::fixed_bytes). Where the bytes no knob
  // can shrink exceed the RAM budget by themselves, no assignment meets it: the knobs then keep
  // the bytes they hold now, neither cut (in vain) nor given more.
  Budgets PlanningBudgets(const std::vector<std::shared_ptr<NodeStats>>& nodes) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Says once that the bytes no knob can shrink, `untunable`, exceed the RAM budget, naming
  // `largest`, the node holding the most of them.
  void WarnUntunableBytes(const NodeStats& largest, int64_t untunable)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Lifts the RAM check's ceilings once the bytes held stay low (see ram_ceiling_).
  void ExpireRamCeilings(const std::vector<std::shared_ptr<NodeStats>>& nodes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The value the RAM check last cut `knob` of `node` to, or INT64_MAX.
  int64_t RamCeiling(const std::string& node, const std::string& knob) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Doubles autotuned buffers that keep running dry after filling (`allowed`: else it only
  // moves the counts on), within `budgets`.
  bool DeepenUnderrunBuffers(const std::vector<std::shared_ptr<NodeStats>>& nodes, int64_t now_ns,
                             bool allowed, const Budgets& budgets)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Apply(const Assignment& a, const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetKnob(NodeStats& node, Tunable& knob, const char* knob_name, int64_t value,
               const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  double Now() const;

  const std::shared_ptr<StatsRegistry> registry_;
  const Budgets budgets_;
  const AutotuneOptions options_;
  const std::chrono::steady_clock::time_point start_;

  mutable Mutex mu_;  // the model and the report
  Model model_ ABSL_GUARDED_BY(mu_);
  int64_t steps_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_buffered_ ABSL_GUARDED_BY(mu_) = 0;
  Plan last_plan_ ABSL_GUARDED_BY(mu_);
  Prediction last_current_ ABSL_GUARDED_BY(mu_);
  std::deque<KnobChange> history_ ABSL_GUARDED_BY(mu_);  // the last kMaxHistory
  int64_t history_dropped_ ABSL_GUARDED_BY(mu_) = 0;
  // Every knob change made, kept or dropped: whether a pass changed something.
  int64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> warnings_ ABSL_GUARDED_BY(mu_);
  bool warned_untunable_ ABSL_GUARDED_BY(mu_) = false;
  std::chrono::milliseconds interval_ ABSL_GUARDED_BY(mu_);
  // Each node's underruns and consumer wait at the last step (DeepenUnderrunBuffers).
  struct UnderrunCount {
    int64_t underruns = 0, wait_ns = 0;
  };
  std::map<std::string, UnderrunCount> underrun_prev_ ABSL_GUARDED_BY(mu_);
  int64_t underrun_prev_ns_ ABSL_GUARDED_BY(mu_) = 0;
  // The value the RAM check last cut each (node, knob) to: neither the plan nor a deepening
  // raises the knob past it, or the next check would cut it again. Lifted after
  // kRamCeilingQuietSteps steps in a row that find the bytes held at most half the budget (a
  // spike, say while a Shuffle fills, should not cap a node for the iterator's life).
  std::map<std::pair<std::string, std::string>, int64_t> ram_ceiling_ ABSL_GUARDED_BY(mu_);
  int64_t ram_quiet_steps_ ABSL_GUARDED_BY(mu_) = 0;

  Mutex stop_mu_;
  CondVar stop_cv_;
  bool stop_ ABSL_GUARDED_BY(stop_mu_) = false;
  std::thread thread_;
};

// Half of MemAvailable from /proc/meminfo (1 GiB where it cannot be read), at least
// kMinDefaultRamBudget: never 0, which Budgets reads as no limit.
inline constexpr int64_t kMinDefaultRamBudget = int64_t{64} << 20;
int64_t DefaultRamBudget();
// The same from the text of a meminfo file.
int64_t RamBudgetFromMeminfo(std::istream& meminfo);

// Makes every Iterator made from now on start AUTOTUNE when its pipeline has
// kAutotune knobs (see Iterator and Options::autotune). This header calls it
// once per program through kAutotuneRegistered below, so that including it
// is enough; it is idempotent and returns true.
bool RegisterAutotuneWithIterators();
inline const bool kAutotuneRegistered = RegisterAutotuneWithIterators();

}  // namespace sluice

#endif  // SLUICE_AUTOTUNE_CONTROLLER_H_
