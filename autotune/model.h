#ifndef SLUICE_AUTOTUNE_MODEL_H_
#define SLUICE_AUTOTUNE_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dataset/node_stats.h"

namespace sluice {

// Why the pipeline cannot go faster under the chosen values.
enum class BottleneckKind {
  kUnknown,     // no elements measured yet
  kCpuBound,    // the slowest stage is at its knob's maximum (or has no knob)
  kInputBound,  // the slowest stage waits on serial input work no knob speeds up
  kRamBudget,   // a larger buffer or parallelism would help but exceeds ram_budget
  kCpuBudget,   // more parallelism would help but exceeds cpu_budget
  kConsumer,    // the pipeline outruns the code calling GetNext
};
const char* BottleneckKindName(BottleneckKind kind);

// One knob of one node as the model sees it.
struct KnobState {
  bool present = false;
  bool autotune = false;
  int64_t value = 0, min = 1, max = 1;
};

// What the model knows about one top-level node. Times are nanoseconds per
// element of this node's output.
struct NodeEstimate {
  std::string name;
  NodeKind kind = NodeKind::kSync;
  // The nodes it reads (NodeStats::inputs). When no node of a model names any, the model is the
  // chain of its nodes in order, each reading the one before.
  std::vector<std::string> inputs;
  bool measured = false;   // at least one interval with output
  double self_ns = 0;      // own work per element (moving average)
  double input_ratio = 1;  // input elements consumed per output element
  // Moving averages of the input elements consumed and the elements produced per interval:
  // input_ratio is their ratio. (A moving average of per-interval ratios would not do: a short
  // interval that hands on 1 element while its input refills a buffer with 3 reads as 3.)
  // Consumed: what the input handed over less the growth of what this node holds ahead
  // (NodeStats::inputs_held), so that a Map filling its window or a Shuffle its buffer does not
  // read as several inputs per output.
  double input_per_interval = 0;
  double output_per_interval = 0;
  bool counted = false;  // the two averages above have a sample
  // A node reading several inputs (Zip, Concatenate, SampleFromDatasets): per input, in the
  // model's order of them, its elements consumed per element of this node, from moving averages
  // of the counts as above. input_ratio is for a node of one input.
  std::vector<double> input_ratios;
  std::vector<double> inputs_per_interval;
  double bytes_per_element = 0;  // moving average
  double observed_rate = 0;      // elements/s over the last interval
  // Root node only: the caller's own time between GetNext calls, per element.
  double consumer_ns = 0;
  int64_t buffered_elements = 0;  // last sample
  int64_t buffered_bytes = 0;     // last sample (0 where the node does not count bytes)
  int64_t active_workers = 0;     // last sample
  int64_t min_window = 0;         // last sample (an ordered parallel Map's; see MapWindow)
  KnobState parallelism, buffer_size, cycle_length;
};

// One node's counters and knobs at one moment.
struct NodeSample {
  NodeStatsSnapshot stats;
  KnobState parallelism, buffer_size, cycle_length;
};

// Values for every knob of every node: index = node index in the model.
struct Assignment {
  std::vector<int64_t> parallelism, buffer_size, cycle_length;
  bool operator==(const Assignment& o) const = default;
};

struct Prediction {
  double throughput = 0;             // root elements per second
  double period_ns = 0;              // time per root element
  std::vector<double> stage_period;  // per node: period of the stage it ends (0: not a stage end)
  double consumer_period = 0;        // the caller's time per element
  std::vector<double> node_rate;     // per node: modelled output elements per second
  int64_t buffered_bytes = 0;        // buffered bytes the assignment implies
  // Workers busy on average: every node's work per root element / period.
  // What the CPU budget limits (configured but idle workers cost nothing).
  double busy_workers = 0;
  // The pipeline runs no faster than its total work spread over the CPU
  // budget: true when that, not a stage, sets the period.
  bool cpu_capped = false;
  int bottleneck = -1;  // node index ending the slowest stage; nodes.size(): the consumer
  bool bottleneck_input_bound = false;
};

struct Budgets {
  int64_t cpu = 1;
  // <= 0: no limit (Model's own callers). The controller always sets one above 0.
  int64_t ram_bytes = 0;
  // Bytes held by nodes whose buffers the model does not size (SizesBuffer: a Shuffle's or a
  // Cache's, inner pipelines'): counted against ram_bytes as they are, whatever the knobs.
  int64_t fixed_bytes = 0;
};

struct Plan {
  Assignment assignment;
  Prediction prediction;
  BottleneckKind bottleneck_kind = BottleneckKind::kUnknown;
};

// Estimates per-node costs from successive stats snapshots and predicts
// throughput for candidate knob values. The pipeline is modelled as the tree
// of its top-level nodes (each names its inputs; a Zip's inputs are
// branches), kept in post-order with the root last; inner pipelines of an
// Interleave ("Interleave[3]/...") are part of the Interleave's own work.
//
// Stages: every async node (and the consumer's thread at the root) runs the
// synchronous nodes below it serially (down to the next async nodes), and its
// own work on `parallelism` workers, so its stage period is
//   max(sum of upstream sync work, own work / parallelism)
// per root element (tf.data's "output time = max(self / parallelism, input
// time)"); the pipeline runs at its slowest stage, and no faster than its
// total work divided by the CPU budget (the cores it may keep busy). A finite
// buffer between an async producer and its consumer adds the M/M/1/K wait
//   P(buffer empty) * min(producer, consumer) period
// which shrinks as the buffer grows: that is what buffers buy.
class Model {
 public:
  // Moving-average weight of a new interval.
  explicit Model(double alpha = 0.3) : alpha_(alpha) {}

  // Folds in a snapshot taken at `now_ns` (steady clock). The first call only
  // sets the baseline.
  void Update(const std::vector<NodeSample>& samples, int64_t now_ns);
  // Sets estimates directly (tests, replaying recorded stats), in post-order, the root last.
  void SetEstimates(std::vector<NodeEstimate> nodes);

  const std::vector<NodeEstimate>& nodes() const { return nodes_; }
  // The nodes node `i` reads, as indices into nodes(), in input order.
  const std::vector<int>& InputsOf(size_t i) const { return links_.inputs[i]; }
  bool ready() const;  // every node that matters has been measured

  Assignment Current() const;
  // `cpu_budget` <= 0: as many cores as the stages can use.
  Prediction Predict(const Assignment& a, double cpu_budget = 0) const;
  // Greedy hill climbing from the smallest values: repeatedly take the single
  // knob step with the largest modelled gain that stays within the budgets
  // (no stage wider than the CPU budget, implied bytes within the RAM
  // budget), until no step gains `min_step_gain` (relative). The slowest
  // stage's step gains most, so the bottleneck is raised first; when two
  // stages tie as the slowest, a pair of steps is tried.
  Plan Optimize(const Budgets& budgets, double min_step_gain = 0.01) const;

 private:
  // Why a candidate assignment is not allowed.
  enum class Blocked { kNo, kCpu, kRam };
  // One candidate: an assignment one or two knob steps away, and the node stepped.
  using Step = std::pair<Assignment, size_t>;

  // The steps Optimize starts from: every autotuned knob at its minimum.
  Assignment Smallest() const;
  // +1 on one knob, or on parallelism and cycle_length together (an Interleave's parallelism is
  // capped by its cycle).
  std::vector<Step> Steps(const Assignment& from) const;
  Blocked CheckBudgets(const Assignment& a, const Prediction& p, const Budgets& budgets) const;
  // The allowed step from `cur` with the largest relative gain per knob step above
  // `min_step_gain`, or nullopt. Single steps first; when none gains, pairs of steps on two
  // different nodes (two stages tied as the slowest: neither alone gains, both do).
  std::optional<std::pair<Assignment, Prediction>> BestStep(const Assignment& a,
                                                            const Prediction& cur,
                                                            const Budgets& budgets, double cpu,
                                                            double min_step_gain) const;
  // Why the plan goes no faster.
  BottleneckKind Classify(const Assignment& a, const Prediction& cur, const Budgets& budgets,
                          double cpu, double min_step_gain) const;

  // The tree over nodes_: who reads each node (-1: the root), and whom each reads.
  struct Links {
    std::vector<int> consumer;
    std::vector<std::vector<int>> inputs;
    // Whose thread calls each node's GetNext: the nearest async node above it, or nodes_.size()
    // (the consumer's thread).
    std::vector<int> runner;
  };
  static Links Link(const std::vector<NodeEstimate>& nodes);
  // Visits per root element: a Batch of 32 reads 32 inputs per output. (Every node comes after
  // what it reads.)
  std::vector<double> Visits() const;

  struct Prev {
    std::string name;
    int64_t elements, bytes, busy_ns, wait_ns, inputs_held;
  };
  // The steps of Update: the estimates of the nodes in `top` (kept by name from the last
  // update, with the knobs and counters sampled now); the estimates measured over the interval
  // of `dt_ns` since the last update, from what each node's counters moved.
  std::vector<NodeEstimate> CarryEstimates(const std::vector<const NodeSample*>& top) const;
  void MeasureInterval(const std::vector<const NodeSample*>& top, const Links& links, double dt_ns,
                       std::vector<NodeEstimate>& next) const;
  const Prev* FindPrev(const std::string& name) const;  // nullptr for a node not seen last time
  double alpha_;
  std::vector<NodeEstimate> nodes_;
  Links links_;
  std::vector<Prev> prev_;
  int64_t prev_ns_ = 0;
};

// True for a node of the top-level chain (not inside an Interleave's inner
// pipeline).
bool IsTopLevel(const std::string& name);

// True for a node whose buffered bytes the model predicts from its knobs (Prediction::
// buffered_bytes): a top-level async node. Any other node's bytes are Budgets::fixed_bytes.
bool SizesBuffer(const NodeEstimate& node);

}  // namespace sluice

#endif  // SLUICE_AUTOTUNE_MODEL_H_
