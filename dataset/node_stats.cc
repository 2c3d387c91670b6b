#include "dataset/node_stats.h"

#include <algorithm>

#include "core/mutex.h"
#include "dataset/options.h"

namespace sluice {

namespace {

void Declare(Tunable& knob, bool tuned, int64_t lo, int64_t hi, int64_t initial) {
  knob.present = true;
  knob.autotune = tuned;
  knob.min = lo;
  knob.max = hi;
  int64_t unset = 0;
  knob.value.compare_exchange_strong(unset, initial);
}

}  // namespace

void Tunable::DeclareFixed(int64_t setting) {
  Declare(*this, /*tuned=*/false, setting, setting, setting);
}

void Tunable::DeclareTunable(int64_t initial, int64_t lo, int64_t hi) {
  Declare(*this, /*tuned=*/true, lo, hi, initial);
}

void Tunable::DeclareFromOption(int64_t requested, int64_t autotune_max) {
  if (requested == kAutotune) {
    DeclareTunable(/*initial=*/autotune_max, /*lo=*/1, /*hi=*/autotune_max);
  } else {
    DeclareFixed(requested);
  }
}

int64_t MapWindow(int64_t parallelism, int64_t min_window, double bytes_per_result) {
  const int64_t base = 2 * std::max<int64_t>(1, parallelism);
  if (base >= min_window || bytes_per_result <= 0) return base;
  const double fits = static_cast<double>(kMaxExtraWindowBytes) / std::max(1.0, bytes_per_result);
  return base + static_cast<int64_t>(std::min(static_cast<double>(min_window - base), fits));
}

const char* NodeKindName(NodeKind kind) {
  switch (kind) {
    case NodeKind::kSource:
      return "source";
    case NodeKind::kSync:
      return "sync";
    case NodeKind::kAsync:
      return "async";
    case NodeKind::kInterleave:
      return "interleave";
  }
  return "unknown";
}

std::shared_ptr<NodeStats> StatsRegistry::GetOrCreate(
    const std::string& name, NodeKind kind, absl::FunctionRef<std::vector<std::string>()> inputs) {
  MutexLock l(&mu_);
  for (const auto& n : nodes_) {
    if (n->name == name) return n;
  }
  auto n = std::make_shared<NodeStats>();
  n->name = name;
  n->kind = kind;
  n->inputs = inputs();
  nodes_.push_back(n);
  return n;
}

std::vector<std::shared_ptr<NodeStats>> StatsRegistry::Nodes() const {
  MutexLock l(&mu_);
  return nodes_;
}

std::vector<NodeStatsSnapshot> StatsRegistry::Snapshot() const {
  std::vector<NodeStatsSnapshot> out;
  for (const auto& n : Nodes()) {
    auto knob = [](const Tunable& t) {
      return t.present ? t.value.load(std::memory_order_relaxed) : int64_t{-1};
    };
    out.push_back(
        {n->name, n->kind, n->elements_produced.load(std::memory_order_relaxed),
         n->bytes_produced.load(std::memory_order_relaxed),
         n->busy_ns.load(std::memory_order_relaxed), n->wait_ns.load(std::memory_order_relaxed),
         n->buffered_elements.load(std::memory_order_relaxed),
         n->buffered_bytes.load(std::memory_order_relaxed),
         n->active_workers.load(std::memory_order_relaxed),
         n->skipped.load(std::memory_order_relaxed), knob(n->parallelism), knob(n->buffer_size),
         knob(n->cycle_length), n->min_window.load(std::memory_order_relaxed),
         n->underruns.load(std::memory_order_relaxed),
         n->inputs_held.load(std::memory_order_relaxed), n->inputs});
  }
  return out;
}

}  // namespace sluice
