#ifndef SLUICE_DATASET_NODE_STATS_H_
#define SLUICE_DATASET_NODE_STATS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "core/mutex.h"

namespace sluice {

// How a node produces elements, for the performance model.
enum class NodeKind {
  kSource,      // reads or generates elements
  kSync,        // does its work in the caller's GetNext
  kAsync,       // works ahead on other threads into a buffer
  kInterleave,  // pulls from several inner pipelines
};
const char* NodeKindName(NodeKind kind);

// A knob AUTOTUNE may turn (parallelism, buffer size, cycle length). Nodes
// read `value` whenever they decide how much to run ahead, so a change takes
// effect without restarting anything.
// Iterators of one node made concurrently (inner pipelines of a parallel
// Interleave) share it, so every field is atomic.
//
// A node declares each knob it has, once per iterator, in one of three ways (tf.data's
// model::MakeParameter and MakeNonTunableParameter):
//   stats().cycle_length.DeclareFixed(cycle);
//   stats().buffer_size.DeclareTunable(/*initial=*/2, /*lo=*/1, /*hi=*/64);
//   stats().parallelism.DeclareFromOption(num_parallel_calls, /*autotune_max=*/cores);
// Iterators of one node share the knob: the first to declare it sets the value, so a later one
// (the next epoch) keeps what AUTOTUNE chose.
struct Tunable {
  // Reported but never turned: the user (or what the node does) fixed it at `setting`.
  void DeclareFixed(int64_t setting);
  // AUTOTUNE turns it over [lo, hi], starting from `initial`.
  void DeclareTunable(int64_t initial, int64_t lo, int64_t hi);
  // From an option the user set to `requested` (>= 1: fixed there) or to kAutotune (tunable over
  // [1, autotune_max], starting from autotune_max).
  void DeclareFromOption(int64_t requested, int64_t autotune_max);

  std::atomic<int64_t> value{0};
  std::atomic<int64_t> min{1};
  std::atomic<int64_t> max{1};
  std::atomic<bool> autotune{false};  // true when the user asked for kAutotune
  std::atomic<bool> present{false};   // false: this node has no such knob
};

// Live counters of one iterator node, updated with relaxed atomics. The
// AUTOTUNE controller and `sluice bench` read them through StatsRegistry.
struct NodeStats {
  std::string name;  // "Map[2]"
  NodeKind kind = NodeKind::kSync;
  // The names of the nodes this one reads, in input order (none for a source): AUTOTUNE's model
  // is the tree these make. Fixed when the entry is made.
  std::vector<std::string> inputs;
  std::atomic<int64_t> elements_produced{0};
  std::atomic<int64_t> bytes_produced{0};
  std::atomic<int64_t> busy_ns{0};  // time spent doing this node's own work
  std::atomic<int64_t> wait_ns{0};  // time the consumer waited on an async buffer
  std::atomic<int64_t> buffered_elements{0};
  std::atomic<int64_t> buffered_bytes{0};
  std::atomic<int64_t> active_workers{0};  // workers busy right now
  std::atomic<int64_t> skipped{0};         // errors ignored, corrupt records skipped
  // Times the consumer found the buffer empty after it had filled (Prefetch): the buffer is too
  // shallow to cover the hand-offs, each a wake-up of the other thread, whatever the producer's
  // pace. AUTOTUNE deepens an autotuned buffer that keeps doing this (tf.data's prefetch
  // autotuner's rule).
  std::atomic<int64_t> underruns{0};
  // A parallel Map in input order: the window of results it keeps at least (see MapWindow);
  // 0 for every other node.
  std::atomic<int64_t> min_window{0};
  // Input elements this node has taken and not yet handed on or dropped: a parallel Map's window,
  // a Prefetch's or a Shuffle's buffer. AUTOTUNE subtracts its growth from what the input handed
  // over, so that filling a buffer does not read as consuming several inputs per output. Changed
  // by fetch_add/fetch_sub only (never store): iterators of one node share it, and each takes
  // its remainder out again in its destructor.
  std::atomic<int64_t> inputs_held{0};
  Tunable parallelism;
  Tunable buffer_size;
  Tunable cycle_length;
};

// In input order, a slow call of a parallel Map holds back every result after it, and once its
// window (results queued, running or done) is full the workers idle until that call ends. Photos
// whose decode cost varies several-fold (sluice bench) left 2 cores' workers idle 4% of the time
// with a window of 2 x parallelism. An ordered Map therefore keeps at least this many results, as
// far as kMaxExtraWindowBytes of them allow.
inline constexpr int64_t kMinOrderedWindow = 16;
inline constexpr int64_t kMaxExtraWindowBytes = int64_t{16} << 20;

// The results a parallel Map keeps ahead of its consumer: 2 x `parallelism` (every worker finds
// its next input queued when it finishes a call), widened towards `min_window` (0: none) by as
// many results of `bytes_per_result` (0: not measured yet, no widening) as kMaxExtraWindowBytes
// holds. Map's bound and the AUTOTUNE model's memory estimate both.
int64_t MapWindow(int64_t parallelism, int64_t min_window, double bytes_per_result);

// A copy of NodeStats at one moment.
struct NodeStatsSnapshot {
  std::string name;
  NodeKind kind;
  int64_t elements_produced, bytes_produced, busy_ns, wait_ns;
  int64_t buffered_elements, buffered_bytes, active_workers, skipped;
  int64_t parallelism, buffer_size, cycle_length;  // -1 where the node has no such knob
  int64_t min_window;
  int64_t underruns;
  int64_t inputs_held;
  std::vector<std::string> inputs;
};

// Every node of one pipeline, in creation order (inputs before the nodes
// that read them). Nodes made and dropped during iteration (inner pipelines
// of Interleave, each repetition of Repeat) keep one entry per name.
class StatsRegistry {
 public:
  // The entry named `name`, made with `kind` and `inputs()` when there is none (inputs is called
  // only then: an Interleave makes its inner pipelines' iterators again and again).
  std::shared_ptr<NodeStats> GetOrCreate(
      const std::string& name, NodeKind kind,
      absl::FunctionRef<std::vector<std::string>()> inputs = [] {
        return std::vector<std::string>();
      });
  std::vector<NodeStatsSnapshot> Snapshot() const;
  std::vector<std::shared_ptr<NodeStats>> Nodes() const;

 private:
  mutable Mutex mu_;
  std::vector<std::shared_ptr<NodeStats>> nodes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice

#endif  // SLUICE_DATASET_NODE_STATS_H_
