#include "autotune/model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sluice {
namespace {

// An async node runs ahead of its consumer on threads of its own; a parallel
// Interleave is one too (a sequential one works in its caller's GetNext).
bool IsAsync(const NodeEstimate& n) {
  return n.kind == NodeKind::kAsync || (n.kind == NodeKind::kInterleave && n.parallelism.present);
}

// Only a parallel Interleave's cycle length changes its speed in the model; a
// sequential one keeps the (order-defining) value it has.
bool TunesCycle(const NodeEstimate& n) {
  return n.cycle_length.autotune && n.kind == NodeKind::kInterleave && n.parallelism.present;
}

// M/M/1/K: probability that a consumer finds a buffer of `k` slots empty when
// the producer takes `producer` and the consumer `consumer` per element.
double ProbabilityEmpty(double producer, double consumer, int64_t k) {
  if (producer <= 0) return 0;
  if (consumer <= 0) return 1;
  const double rho = consumer / producer;  // arrival rate / service rate
  const double kk = static_cast<double>(std::max<int64_t>(1, k));
  if (std::abs(rho - 1) < 1e-9) return 1 / (kk + 1);
  const double denom = 1 - std::pow(rho, kk + 1);
  if (!std::isfinite(denom)) return 0;
  return (1 - rho) / denom;
}

double Ema(double old_value, double sample, double alpha, bool first) {
  return first ? sample : (1 - alpha) * old_value + alpha * sample;
}

// The elements async node `i` holds under assignment `a` with `par` workers, for the bytes it
// buffers: Map keeps up to MapWindow results (queued, running or done: map.cc's bound), Prefetch
// its buffer, TFRecord `buffer_size` records per open file, Interleave what its open slots hold
// (scaled from what it holds now).
int64_t BufferCapacity(const NodeEstimate& node, const Assignment& a, size_t i, int64_t par) {
  if (node.buffer_size.present) {
    return a.buffer_size[i] * (node.cycle_length.present ? a.cycle_length[i] : 1);
  }
  if (node.kind == NodeKind::kInterleave && node.cycle_length.present) {
    const int64_t cur = std::max<int64_t>(1, node.cycle_length.value);
    return std::max(a.cycle_length[i], node.buffered_elements * a.cycle_length[i] / cur);
  }
  if (node.kind == NodeKind::kAsync && node.parallelism.present) {
    return MapWindow(par, node.min_window, node.bytes_per_element);
  }
  return par;
}

// True when node `j` is node `a` or below it (a reads it, or reads what reads it, ...).
bool IsAtOrBelow(const std::vector<int>& consumer, int a, int j) {
  for (size_t steps = 0; j >= 0 && steps <= consumer.size(); ++steps, j = consumer[j]) {
    if (j == a) return true;
  }
  return false;
}

// The buffer waits between each async producer and what consumes it, per root element, from the
// stage periods in `p`: the producer runs at its slowest stage at or below it, the consumer at the
// slowest above it.
double BufferWaits(const std::vector<NodeEstimate>& nodes, const std::vector<int>& consumers,
                   const Assignment& a, const Prediction& p) {
  const int n = static_cast<int>(nodes.size());
  double waits = 0;
  for (int k = 0; k < n; ++k) {
    if (!IsAsync(nodes[k])) continue;
    double producer = 0, consumer = p.consumer_period;
    for (int j = 0; j < n; ++j) {
      if (IsAtOrBelow(consumers, k, j)) {
        producer = std::max(producer, p.stage_period[j]);
      } else if (IsAtOrBelow(consumers, j, k)) {
        consumer = std::max(consumer, p.stage_period[j]);
      }
    }
    const int64_t slots = nodes[k].buffer_size.present   ? a.buffer_size[k]
                          : nodes[k].parallelism.present ? a.parallelism[k]
                                                         : 1;
    waits += ProbabilityEmpty(producer, consumer, slots) * std::min(producer, consumer);
  }
  return waits;
}

}  // namespace

const char* BottleneckKindName(BottleneckKind kind) {
  switch (kind) {
    case BottleneckKind::kUnknown:
      return "unknown";
    case BottleneckKind::kCpuBound:
      return "CPU-bound";
    case BottleneckKind::kInputBound:
      return "input-bound";
    case BottleneckKind::kRamBudget:
      return "capped by RAM budget";
    case BottleneckKind::kCpuBudget:
      return "capped by CPU budget";
    case BottleneckKind::kConsumer:
      return "consumer-bound";
  }
  return "unknown";
}

bool IsTopLevel(const std::string& name) { return name.find('/') == std::string::npos; }

bool SizesBuffer(const NodeEstimate& node) { return IsTopLevel(node.name) && IsAsync(node); }

namespace {

int FindNode(const std::vector<const NodeSample*>& top, const std::string& name) {
  for (size_t i = 0; i < top.size(); ++i) {
    if (top[i]->stats.name == name) return static_cast<int>(i);
  }
  return -1;
}

// `top` in post-order from the root (the last node that no other names as an input), each node's
// inputs in the order it names them, so that the root is last and every node comes after what it
// reads (a Concatenate's second input is made, and registered, after the Concatenate). Trees the
// root does not reach go first, each in post-order, in the registry's order of their roots:
// without named inputs (tests, recordings) that is the chain of the nodes in order, and Link
// chains the roots of those trees, each to the node after it.
std::vector<const NodeSample*> TreeOrder(const std::vector<const NodeSample*>& top) {
  const size_t n = top.size();
  std::vector<std::vector<int>> inputs(n);
  std::vector<bool> named(n, false);
  for (size_t i = 0; i < n; ++i) {
    for (const std::string& input : top[i]->stats.inputs) {
      const int j = FindNode(top, input);
      if (j < 0 || j == static_cast<int>(i)) continue;
      inputs[i].push_back(j);
      named[j] = true;
    }
  }
  std::vector<bool> placed(n, false);
  std::vector<const NodeSample*> out;
  for (size_t root = 0; root < n; ++root) {
    if (named[root]) continue;
    // Iterative post-order: (node, next input to visit).
    std::vector<std::pair<int, size_t>> stack{{static_cast<int>(root), 0}};
    placed[root] = true;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < inputs[node].size()) {
        const int j = inputs[node][next++];
        if (!placed[j]) {
          placed[j] = true;
          stack.push_back({j, 0});  // `node` and `next` are not used after this
        }
        continue;
      }
      out.push_back(top[node]);
      stack.pop_back();
    }
  }
  // Nodes on a cycle of names (cannot happen: names are unique, and inputs are made first) go
  // first.
  std::vector<const NodeSample*> unplaced;
  for (size_t i = 0; i < n; ++i) {
    if (!placed[i]) unplaced.push_back(top[i]);
  }
  out.insert(out.begin(), unplaced.begin(), unplaced.end());
  return out;
}

}  // namespace

Model::Links Model::Link(const std::vector<NodeEstimate>& nodes) {
  const int n = static_cast<int>(nodes.size());
  Links l;
  l.consumer.assign(n, -1);
  l.inputs.assign(n, {});
  for (int i = 0; i < n; ++i) {
    for (const std::string& input : nodes[i].inputs) {
      for (int j = 0; j < n; ++j) {
        if (j == i || nodes[j].name != input || l.consumer[j] >= 0) continue;
        l.consumer[j] = i;
        l.inputs[i].push_back(j);
        break;
      }
    }
  }
  // Nodes no other reads, but the root (the last): the chain, each read by the next.
  for (int i = 0; i + 1 < n; ++i) {
    if (l.consumer[i] >= 0) continue;
    l.consumer[i] = i + 1;
    l.inputs[i + 1].push_back(i);
  }
  l.runner.assign(n, n);
  for (int i = 0; i < n; ++i) {
    // Up to the first async node above: its workers call this node's GetNext.
    for (int c = l.consumer[i], steps = 0; c >= 0 && steps < n; c = l.consumer[c], ++steps) {
      if (IsAsync(nodes[c])) {
        l.runner[i] = c;
        break;
      }
    }
  }
  return l;
}

void Model::SetEstimates(std::vector<NodeEstimate> nodes) {
  nodes_ = std::move(nodes);
  links_ = Link(nodes_);
}

void Model::Update(const std::vector<NodeSample>& samples, int64_t now_ns) {
  std::vector<const NodeSample*> registered;
  for (const NodeSample& s : samples) {
    if (IsTopLevel(s.stats.name)) registered.push_back(&s);
  }
  const std::vector<const NodeSample*> top = TreeOrder(registered);
  std::vector<NodeEstimate> next = CarryEstimates(top);
  Links links = Link(next);
  const double dt_ns = static_cast<double>(now_ns - prev_ns_);
  if (prev_ns_ != 0 && dt_ns > 0) MeasureInterval(top, links, dt_ns, next);
  nodes_ = std::move(next);
  links_ = std::move(links);
  prev_.clear();
  for (const NodeSample* s : top) {
    prev_.push_back({s->stats.name, s->stats.elements_produced, s->stats.bytes_produced,
                     s->stats.busy_ns, s->stats.wait_ns, s->stats.inputs_held});
  }
  prev_ns_ = now_ns;
}

std::vector<NodeEstimate> Model::CarryEstimates(const std::vector<const NodeSample*>& top) const {
  // Keep the estimates of nodes seen before (matched by name).
  std::vector<NodeEstimate> next(top.size());
  for (size_t i = 0; i < top.size(); ++i) {
    const NodeSample& s = *top[i];
    for (const NodeEstimate& old : nodes_) {
      if (old.name == s.stats.name) next[i] = old;
    }
    NodeEstimate& n = next[i];
    n.name = s.stats.name;
    n.kind = s.stats.kind;
    n.inputs = s.stats.inputs;
    n.min_window = s.stats.min_window;
    n.buffered_elements = s.stats.buffered_elements;
    n.buffered_bytes = s.stats.buffered_bytes;
    n.active_workers = s.stats.active_workers;
    n.parallelism = s.parallelism;
    n.buffer_size = s.buffer_size;
    n.cycle_length = s.cycle_length;
  }
  return next;
}

const Model::Prev* Model::FindPrev(const std::string& name) const {
  for (const Prev& p : prev_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

void Model::MeasureInterval(const std::vector<const NodeSample*>& top, const Links& links,
                            double dt_ns, std::vector<NodeEstimate>& next) const {
  std::vector<int64_t> delta_elements(top.size(), -1);
  std::vector<int64_t> delta_busy(top.size(), 0), delta_wait(top.size(), 0);
  for (size_t i = 0; i < top.size(); ++i) {
    const Prev* p = FindPrev(top[i]->stats.name);
    if (p == nullptr) continue;
    delta_elements[i] = top[i]->stats.elements_produced - p->elements;
    delta_busy[i] = top[i]->stats.busy_ns - p->busy_ns;
    delta_wait[i] = top[i]->stats.wait_ns - p->wait_ns;
  }
  const bool root_measured = !top.empty() && next.back().measured;
  for (size_t i = 0; i < top.size(); ++i) {
    NodeEstimate& n = next[i];
    const Prev* p = FindPrev(n.name);
    if (p == nullptr || delta_elements[i] < 0) continue;
    const int64_t de = delta_elements[i];
    n.observed_rate = static_cast<double>(de) * 1e9 / dt_ns;
    const std::vector<int>& ins = links.inputs[i];
    const bool inputs_seen =
        std::all_of(ins.begin(), ins.end(), [&](int j) { return delta_elements[j] >= 0; });
    if (ins.size() == 1 && inputs_seen) {
      // Inputs pulled ahead into a window or buffer are not consumed yet. (Below 0 only by the
      // one input a node may be taking between the two counters' updates.)
      const int64_t held_delta = top[i]->stats.inputs_held - p->inputs_held;
      const int64_t consumed = std::max<int64_t>(0, delta_elements[ins[0]] - held_delta);
      n.input_per_interval =
          Ema(n.input_per_interval, static_cast<double>(consumed), alpha_, !n.counted);
      n.output_per_interval =
          Ema(n.output_per_interval, static_cast<double>(de), alpha_, !n.counted);
      n.counted = true;
      if (n.output_per_interval > 0) {
        n.input_ratio = n.input_per_interval / n.output_per_interval;
      }
    } else if (ins.size() > 1 && inputs_seen) {
      // Zip and the like hold nothing ahead: what each input handed over was consumed.
      const bool first = !n.counted || n.inputs_per_interval.size() != ins.size();
      n.inputs_per_interval.resize(ins.size(), 0);
      n.input_ratios.resize(ins.size(), 1);
      for (size_t k = 0; k < ins.size(); ++k) {
        n.inputs_per_interval[k] = Ema(n.inputs_per_interval[k],
                                       static_cast<double>(delta_elements[ins[k]]), alpha_, first);
      }
      n.output_per_interval = Ema(n.output_per_interval, static_cast<double>(de), alpha_, first);
      n.counted = true;
      if (n.output_per_interval > 0) {
        for (size_t k = 0; k < ins.size(); ++k) {
          n.input_ratios[k] = n.inputs_per_interval[k] / n.output_per_interval;
        }
      }
    }
    if (de == 0) continue;
    const double ded = static_cast<double>(de);
    const bool first = !n.measured;
    n.self_ns = Ema(n.self_ns, static_cast<double>(delta_busy[i]) / ded, alpha_, first);
    n.bytes_per_element =
        Ema(n.bytes_per_element, static_cast<double>(top[i]->stats.bytes_produced - p->bytes) / ded,
            alpha_, first);
    n.measured = true;
  }
  // The caller's time per element: wall time per root element less what it spent inside
  // GetNext (the sync nodes its thread runs, and its waits on the async nodes below them).
  const size_t root = top.size() - 1;
  if (!top.empty() && delta_elements[root] > 0) {
    double inside = 0;
    for (size_t j = 0; j < top.size(); ++j) {
      if (links.runner[j] != static_cast<int>(top.size())) continue;
      inside += static_cast<double>(IsAsync(next[j]) ? delta_wait[j] : delta_busy[j]);
    }
    const double de = static_cast<double>(delta_elements[root]);
    const double consumer = std::max(0.0, (dt_ns - inside) / de);
    next[root].consumer_ns = Ema(next[root].consumer_ns, consumer, alpha_, !root_measured);
  }
}

std::vector<double> Model::Visits() const {
  const size_t n = nodes_.size();
  std::vector<double> visits(n, 1);
  for (size_t i = n; i-- > 0;) {
    const std::vector<int>& ins = links_.inputs[i];
    for (size_t k = 0; k < ins.size(); ++k) {
      const std::vector<double>& ratios = nodes_[i].input_ratios;
      const double ratio = ins.size() == 1     ? nodes_[i].input_ratio
                           : k < ratios.size() ? ratios[k]
                                               : 1;
      visits[ins[k]] = visits[i] * ratio;
    }
  }
  return visits;
}

bool Model::ready() const {
  if (nodes_.empty()) return false;
  // A node that has handed on nothing matters only where something reads it: an input of a
  // Concatenate that was empty, of a SampleFromDatasets of weight 0, or of a ChooseFromDatasets
  // never chosen is read 0 times per root element.
  const std::vector<double> visits = Visits();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].measured && visits[i] > 0) return false;
  }
  return true;
}

Assignment Model::Current() const {
  Assignment a;
  for (const NodeEstimate& n : nodes_) {
    a.parallelism.push_back(n.parallelism.value);
    a.buffer_size.push_back(n.buffer_size.value);
    a.cycle_length.push_back(n.cycle_length.value);
  }
  return a;
}

Prediction Model::Predict(const Assignment& a, double cpu_budget) const {
  const size_t n = nodes_.size();
  Prediction p;
  p.stage_period.assign(n, 0);
  p.node_rate.assign(n, 0);
  if (n == 0) return p;
  const std::vector<double> visits = Visits();
  // Sync work per root element on each async node's workers, and (at n) on the caller's thread.
  std::vector<double> serial(n, 0);
  serial.push_back(0);  // n + 1 entries (n + 1 in the size made GCC 12 warn of an overflow)
  std::vector<double> work(n, 0);
  std::vector<bool> input_bound(n, false);
  double total_work = 0;  // every node's work per root element, on any thread
  int heaviest = 0;       // the node with the most work
  for (size_t i = 0; i < n; ++i) {
    const NodeEstimate& node = nodes_[i];
    work[i] = node.self_ns * visits[i];
    total_work += work[i];
    if (work[i] > work[heaviest]) heaviest = static_cast<int>(i);
    if (!IsAsync(node)) {
      // A parallel Batch splits its copies over workers while its caller
      // waits: faster serial work, on threads the async stages already count.
      const int64_t par = node.parallelism.present ? std::max<int64_t>(1, a.parallelism[i]) : 1;
      serial[links_.runner[i]] += work[i] / static_cast<double>(par);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const NodeEstimate& node = nodes_[i];
    if (!IsAsync(node)) continue;
    int64_t par = node.parallelism.present ? std::max<int64_t>(1, a.parallelism[i]) : 1;
    if (node.kind == NodeKind::kInterleave && node.cycle_length.present) {
      par = std::min(par, std::max<int64_t>(1, a.cycle_length[i]));
    }
    const double own = work[i] / static_cast<double>(par);
    p.stage_period[i] = std::max(serial[i], own);
    input_bound[i] = serial[i] > own;
    p.buffered_bytes += static_cast<int64_t>(static_cast<double>(BufferCapacity(node, a, i, par)) *
                                             node.bytes_per_element);
  }
  // Sync nodes above every async one run on the caller's thread; so does the caller's own work.
  if (serial[n] > 0) p.stage_period[n - 1] = serial[n];
  p.consumer_period = nodes_[n - 1].consumer_ns;
  p.period_ns = p.consumer_period;
  p.bottleneck = static_cast<int>(n);
  for (size_t i = 0; i < n; ++i) {
    if (p.stage_period[i] > p.period_ns) {
      p.period_ns = p.stage_period[i];
      p.bottleneck = static_cast<int>(i);
    }
  }
  // Every stage's workers share the budget's cores: wider stages than that
  // only take turns.
  const double cpu_period = cpu_budget > 0 ? total_work / cpu_budget : 0;
  if (cpu_period > p.period_ns) {
    p.period_ns = cpu_period;
    p.cpu_capped = true;
    p.bottleneck = heaviest;  // where more cores would go first
  }
  p.period_ns += BufferWaits(nodes_, links_.consumer, a, p);
  if (p.bottleneck < static_cast<int>(n) && !p.cpu_capped) {
    p.bottleneck_input_bound = input_bound[p.bottleneck];
  }
  p.throughput = p.period_ns > 0 ? 1e9 / p.period_ns : 0;
  p.busy_workers = p.period_ns > 0 ? total_work / p.period_ns : 0;
  for (size_t i = 0; i < n; ++i) p.node_rate[i] = p.throughput * visits[i];
  return p;
}

Assignment Model::Smallest() const {
  Assignment a = Current();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const NodeEstimate& node = nodes_[i];
    if (node.parallelism.autotune) a.parallelism[i] = node.parallelism.min;
    if (node.buffer_size.autotune) a.buffer_size[i] = node.buffer_size.min;
    if (TunesCycle(node)) a.cycle_length[i] = node.cycle_length.min;
  }
  return a;
}

std::vector<Model::Step> Model::Steps(const Assignment& from) const {
  std::vector<Step> out;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const NodeEstimate& node = nodes_[i];
    const bool par = node.parallelism.autotune && from.parallelism[i] < node.parallelism.max;
    const bool buf = node.buffer_size.autotune && from.buffer_size[i] < node.buffer_size.max;
    const bool cyc = TunesCycle(node) && from.cycle_length[i] < node.cycle_length.max;
    if (par) {
      out.push_back({from, i});
      ++out.back().first.parallelism[i];
    }
    if (buf) {
      out.push_back({from, i});
      ++out.back().first.buffer_size[i];
    }
    if (cyc) {
      out.push_back({from, i});
      ++out.back().first.cycle_length[i];
    }
    if (par && cyc) {
      out.push_back({from, i});
      ++out.back().first.parallelism[i];
      ++out.back().first.cycle_length[i];
    }
  }
  return out;
}

// The CPU budget bounds busy workers, which Predict keeps within it by spreading the total work
// over the budget's cores; what is left to forbid is a single stage with more workers than the
// budget (they could all be busy at once).
Model::Blocked Model::CheckBudgets(const Assignment& a, const Prediction& p,
                                   const Budgets& budgets) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].parallelism.autotune && IsAsync(nodes_[i]) && a.parallelism[i] > budgets.cpu) {
      return Blocked::kCpu;
    }
  }
  if (budgets.ram_bytes > 0 && p.buffered_bytes + budgets.fixed_bytes > budgets.ram_bytes) {
    return Blocked::kRam;
  }
  return Blocked::kNo;
}

std::optional<std::pair<Assignment, Prediction>> Model::BestStep(const Assignment& a,
                                                                 const Prediction& cur,
                                                                 const Budgets& budgets, double cpu,
                                                                 double min_step_gain) const {
  std::optional<std::pair<Assignment, Prediction>> best;
  double best_gain = min_step_gain;
  // `knob_steps` candidates are compared by gain per knob step, so a pair (two steps) must gain
  // twice as much as a single step would have to.
  auto consider = [&](const Assignment& cand, int knob_steps) {
    Prediction p = Predict(cand, cpu);
    if (CheckBudgets(cand, p, budgets) != Blocked::kNo) return;
    const double gain = cur.throughput > 0 ? (p.throughput - cur.throughput) / cur.throughput : 0;
    if (gain / knob_steps > best_gain) {
      best_gain = gain / knob_steps;
      best.emplace(cand, p);
    }
  };
  const std::vector<Step> singles = Steps(a);
  for (const auto& [cand, node] : singles) consider(cand, 1);
  if (best) return best;
  for (const auto& [first, first_node] : singles) {
    for (const auto& [second, second_node] : Steps(first)) {
      if (second_node != first_node) consider(second, 2);
    }
  }
  return best;
}

BottleneckKind Model::Classify(const Assignment& a, const Prediction& cur, const Budgets& budgets,
                               double cpu, double min_step_gain) const {
  if (!ready()) return BottleneckKind::kUnknown;
  if (cur.cpu_capped) return BottleneckKind::kCpuBudget;  // every core of the budget is busy
  if (cur.bottleneck >= static_cast<int>(nodes_.size())) return BottleneckKind::kConsumer;
  const size_t b = static_cast<size_t>(cur.bottleneck);
  const NodeEstimate& node = nodes_[b];
  // Serial work on the caller's thread.
  if (!IsAsync(node)) return BottleneckKind::kCpuBound;
  if (cur.bottleneck_input_bound) return BottleneckKind::kInputBound;
  // Would one more worker (or slot) there help, and what forbids it?
  for (const auto& [cand, node_index] : Steps(a)) {
    if (node_index != b) continue;
    Prediction p = Predict(cand, cpu);
    if (p.throughput <= cur.throughput * (1 + min_step_gain)) continue;
    const Blocked why = CheckBudgets(cand, p, budgets);
    if (why == Blocked::kCpu) return BottleneckKind::kCpuBudget;
    if (why == Blocked::kRam) return BottleneckKind::kRamBudget;
  }
  return BottleneckKind::kCpuBound;
}

Plan Model::Optimize(const Budgets& budgets, double min_step_gain) const {
  const double cpu = static_cast<double>(std::max<int64_t>(1, budgets.cpu));
  Plan plan;
  plan.assignment = Smallest();
  plan.prediction = Predict(plan.assignment, cpu);
  for (int iter = 0; iter < 4096; ++iter) {
    auto step = BestStep(plan.assignment, plan.prediction, budgets, cpu, min_step_gain);
    if (!step) break;
    plan.assignment = std::move(step->first);
    plan.prediction = step->second;
  }
  plan.bottleneck_kind = Classify(plan.assignment, plan.prediction, budgets, cpu, min_step_gain);
  return plan;
}

}  // namespace sluice
