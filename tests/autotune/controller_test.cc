#include "autotune/controller.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr int64_t kMiB = 1 << 20;

void Spin(std::chrono::microseconds d) {
  const auto end = steady_clock::now() + d;
  while (steady_clock::now() < end) {
  }
}

Dataset SpinPipeline(int64_t n, std::chrono::microseconds cost, Options options) {
  return Dataset::Range(n)
      .Map(
          [cost](Element e) -> absl::StatusOr<Element> {
            Spin(cost);
            return e;
          },
          {.num_parallel_calls = kAutotune})
      .Prefetch(kAutotune)
      .WithOptions(options);
}

std::shared_ptr<NodeStats> FindNode(const Iterator& it, const std::string& name) {
  for (const auto& n : it.stats_registry()->Nodes()) {
    if (n->name == name) return n;
  }
  return nullptr;
}

// Makes the iterator's nodes without pulling an element.
void MakeNodes(Iterator& it) { ASSERT_TRUE(it.Initialize().ok()); }

TEST(AutotuneControllerTest, LiveCpuBoundMapSettlesAtTheOptimum) {
  Options options;
  options.threads = 2;       // the optimum for a CPU-bound map is then 2
  options.autotune = false;  // this test starts its own controller, after moving a knob
  auto it = SpinPipeline(100000, std::chrono::microseconds(2000), options).MakeIterator();
  MakeNodes(*it);
  auto map = FindNode(*it, "Map[1]");
  ASSERT_NE(map, nullptr);
  map->parallelism.value = 1;  // start away from the optimum
  auto controller = AutotuneController::Start(*it);
  EXPECT_EQ(controller->cpu_budget(), 2);
  const auto start = steady_clock::now();
  int n = 0;
  while (steady_clock::now() - start < milliseconds(1500)) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    ++n;
    if (n >= 150 && map->parallelism.value.load() == 2) break;
  }
  // Generous for a loaded machine: within one of the optimum, and the model
  // asks for 2 as soon as it has measured anything (2x modelled gain).
  EXPECT_EQ(map->parallelism.value.load(), 2) << controller->Report().ToString();
  AutotuneReport r = controller->Report();
  std::cout << r.ToString();
  // The Map's first change. (The same step may first deepen the Prefetch after it, which the
  // consumer found empty while the Map ran at 1: the history lists that change first.)
  auto first = std::find_if(r.history.begin(), r.history.end(), [](const KnobChange& c) {
    return c.node == "Map[1]" && c.knob == "parallelism";
  });
  ASSERT_NE(first, r.history.end());
  EXPECT_EQ(first->from, 1);
  EXPECT_EQ(first->to, 2);
  EXPECT_LT(first->time_s, 1.0);
}

TEST(AutotuneControllerTest, ReportFieldsAreFilled) {
  Options options;
  options.threads = 2;
  options.ram_budget = 256 * kMiB;
  // The iterator's own AUTOTUNE, started with its nodes.
  auto it = SpinPipeline(100000, std::chrono::microseconds(500), options).MakeIterator();
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(it->GetNext().ok());
  // Steps come every 10 ms at first; wait for one after these elements.
  absl::StatusOr<AutotuneReport> report = it->AutotuneReport();
  ASSERT_TRUE(report.ok()) << report.status();
  const int64_t steps = report->steps;
  const auto start = steady_clock::now();
  while (report->steps < steps + 2 && steady_clock::now() - start < milliseconds(3000)) {
    ASSERT_TRUE(it->GetNext().ok());
    report = it->AutotuneReport();
  }
  const AutotuneReport& r = *report;
  EXPECT_GE(r.steps, steps + 2);
  EXPECT_EQ(r.cpu_budget, 2);
  EXPECT_EQ(r.ram_budget, 256 * kMiB);
  EXPECT_GT(r.elapsed_s, 0);
  EXPECT_GT(r.modelled_throughput, 0);
  EXPECT_GT(r.observed_throughput, 0);
  EXPECT_FALSE(r.bottleneck.empty());
  EXPECT_NE(r.bottleneck_kind, BottleneckKind::kUnknown);
  std::cout << r.ToString();  // an example for the reader of the test log
  ASSERT_EQ(r.stages.size(), 4u);
  EXPECT_EQ(r.stages[0].name, "Range[0]");
  EXPECT_EQ(r.stages[1].name, "Map[1]");
  EXPECT_EQ(r.stages[2].name, "Prefetch[2]");
  EXPECT_EQ(r.stages[3].name, "WithOptions[3]");
  EXPECT_EQ(r.stages[1].kind, NodeKind::kAsync);
  EXPECT_GE(r.stages[1].parallelism, 1);
  EXPECT_EQ(r.stages[1].buffer_size, -1);
  EXPECT_GE(r.stages[2].buffer_size, 1);
  // A 500 us spin: each interval pairs the work finished in it with the
  // elements handed on in it, which can differ by what is buffered, so the
  // moving average sits near 500 us rather than above it.
  EXPECT_GE(r.stages[1].self_us, 250);
  EXPECT_NEAR(r.stages[1].input_ratio, 1.0, 0.2);
  EXPECT_GT(r.stages[1].bytes_per_element, 0);
  for (const StageReport& s : r.stages) EXPECT_GT(s.modelled_rate, 0) << s.name;
  const std::string text = r.ToString();
  EXPECT_NE(text.find("Map[1]"), std::string::npos);
  EXPECT_NE(text.find("history:"), std::string::npos);
  EXPECT_NE(text.find(BottleneckKindName(r.bottleneck_kind)), std::string::npos);
  const std::string json = r.ToJson();
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.back(), '}');
  EXPECT_NE(json.find("\"stages\": [{\"name\": \"Range[0]\""), std::string::npos);
  EXPECT_NE(json.find("\"bottleneck_kind\": \""), std::string::npos);
  EXPECT_NE(json.find("\"consumer_us\": "), std::string::npos);
  EXPECT_GE(r.consumer_us, 0);
  EXPECT_NE(text.find(" us/element; bottleneck: "), std::string::npos);
  EXPECT_NE(json.find("\"history\": ["), std::string::npos);
}

TEST(AutotuneControllerTest, InputBoundMapSettlesWithinOneOfTheOptimum) {
  // A 1 ms serial source feeding a 2 ms map: 2 workers keep pace with the
  // source, a 3rd gains nothing. Both sleep rather than spin, so that the
  // optimum does not move with the load other processes put on the cores.
  // From 1 worker the controller grows; from 8 (as an early step on a few
  // noisy costs may leave it) it must give the idle workers back.
  for (int64_t start_workers : {1, 8}) {
    SCOPED_TRACE(start_workers);
    Options options;
    options.threads = 8;
    options.autotune = false;  // started below, after moving the knob away
    auto sleep_map = [](std::chrono::microseconds d) {
      return [d](Element e) -> absl::StatusOr<Element> {
        std::this_thread::sleep_for(d);
        return e;
      };
    };
    auto it =
        Dataset::Range(100000)
            .Map(sleep_map(std::chrono::microseconds(1000)))
            .Map(sleep_map(std::chrono::microseconds(2000)), {.num_parallel_calls = kAutotune})
            .Prefetch(kAutotune)
            .WithOptions(options)
            .MakeIterator();
    MakeNodes(*it);
    auto map = FindNode(*it, "Map[2]");
    ASSERT_NE(map, nullptr);
    map->parallelism.value = start_workers;
    auto controller = AutotuneController::Start(*it);
    const auto start = steady_clock::now();
    while (steady_clock::now() - start < milliseconds(2500)) ASSERT_TRUE(it->GetNext().ok());
    const int64_t chosen = map->parallelism.value.load();
    // The optimum from the costs as measured: the map's per element over the source's, about 2.
    // On saturated cores (a sanitizer, CI's other jobs) a sleep's wake-up can add a millisecond,
    // and more to the serial source than to the map: one run under TSan measured 2,411 us for the
    // source and 2,287 us for the map, where one worker keeps pace and the controller rightly
    // chose 1.
    const AutotuneReport report = controller->Report();
    double source_us = 0, map_us = 0;
    for (const StageReport& stage : report.stages) {
      if (stage.name == "Map[1]") source_us = stage.self_us;
      if (stage.name == "Map[2]") map_us = stage.self_us;
    }
    ASSERT_GT(source_us, 0) << report.ToString();
    // At least enough workers to come within a quarter of the source's pace, at most one more
    // than the nearest count.
    const double needed = map_us / source_us;
    EXPECT_GE(chosen, std::max<int64_t>(1, static_cast<int64_t>(std::ceil(needed - 0.25))))
        << report.ToString();
    // Unless this loop itself measured a good part of the source's time per element (a saturated
    // machine descheduling it: one TSan run in CI measured ~5 ms for it against the source's 9 ms,
    // and kept 3 workers): the map's workers are then also the buffer slots between two slow ends,
    // which the model rightly keeps (its plan for these costs takes a second worker from a
    // consumer at a third of the source's time). The map is then no longer simply input-bound,
    // and the upper bound says nothing.
    if (report.consumer_us < 0.25 * source_us) {
      EXPECT_LE(chosen, static_cast<int64_t>(std::lround(needed)) + 1) << report.ToString();
    } else {
      std::cout << "consumer measured " << report.consumer_us << " us per element against the "
                << "source's " << source_us << " us: the upper bound is not checked\n";
    }
    std::cout << report.ToString();
  }
}

TEST(AutotuneControllerTest, RamBudgetHoldsForLargeElements) {
  // 8 MiB elements made by a parallel map, consumed at about the rate they
  // are made, so that deeper buffers would pay off: the buffered bytes must
  // stay within 64 MiB all the same.
  Options options;
  options.threads = 2;
  options.ram_budget = 64 * kMiB;
  Dataset ds = Dataset::Range(100000)
                   .Map(
                       [](Element) -> absl::StatusOr<Element> {
                         // Not filled: the cost is the spin alone, whatever the build. (A
                         // memset of 8 MiB took 17 ms under ASan, and the buffers never filled.)
                         Tensor t(DType::kUint8, Shape({8 * kMiB}));
                         Spin(std::chrono::microseconds(3000));
                         return Element{t};
                       },
                       {.num_parallel_calls = kAutotune})
                   .Prefetch(kAutotune)
                   .WithOptions(options);
  auto it = ds.MakeIterator();
  MakeNodes(*it);  // AUTOTUNE starts with the nodes
  ASSERT_NE(it->tuner(), nullptr);
  std::atomic<bool> done{false};
  std::atomic<int64_t> peak{0};
  std::thread sampler([&] {
    while (!done.load()) {
      // Prefetch's buffer and the Map's finished results.
      int64_t sum = 0;
      for (const auto& s : it->Stats()) sum += s.buffered_bytes;
      peak.store(std::max(peak.load(), sum));
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  const auto start = steady_clock::now();
  int n = 0;
  while (steady_clock::now() - start < milliseconds(2500) && n < 400) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    ASSERT_EQ((**e)[0].byte_size(), static_cast<size_t>(8 * kMiB));
    ++n;
    Spin(std::chrono::microseconds(2000));
  }
  done = true;
  sampler.join();
  absl::StatusOr<AutotuneReport> report = it->AutotuneReport();
  ASSERT_TRUE(report.ok()) << report.status();
  const AutotuneReport& r = *report;
  std::cout << r.ToString();
  EXPECT_EQ(r.ram_budget, 64 * kMiB);
  EXPECT_GT(peak.load(), 16 * kMiB);  // the sampler saw the buffers at work
  EXPECT_LE(peak.load(), 64 * kMiB) << r.ToString();
  EXPECT_LE(r.peak_observed_buffered_bytes, 64 * kMiB);
  EXPECT_LE(r.predicted_buffered_bytes, 64 * kMiB) << r.ToString();
}

TEST(AutotuneControllerTest, CpuBudgetOfOneKeepsOneWorkerBusy) {
  Options options;
  options.threads = 2;
  options.cpu_budget = 1;
  Dataset ds = Dataset::Range(100000)
                   .Map(
                       [](Element e) -> absl::StatusOr<Element> {
                         Spin(std::chrono::microseconds(500));
                         return e;
                       },
                       {.num_parallel_calls = kAutotune})
                   .WithOptions(options);
  auto it = ds.MakeIterator();
  MakeNodes(*it);
  // The budget caps the arena, so even the Map's starting value is 1.
  EXPECT_EQ(it->context().runtime->num_threads(), 1);
  EXPECT_EQ(FindNode(*it, "Map[1]")->parallelism.value.load(), 1);
  std::atomic<bool> done{false};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> samples{0};
  std::thread sampler([&] {
    while (!done.load()) {
      int64_t sum = 0;
      for (const auto& s : it->Stats()) sum += s.active_workers;
      peak.store(std::max(peak.load(), sum));
      samples.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  for (int i = 0; i < 600; ++i) ASSERT_TRUE(it->GetNext().ok());
  done = true;
  sampler.join();
  EXPECT_GT(samples.load(), 10);
  EXPECT_EQ(peak.load(), 1);  // at work, but never more than one
  EXPECT_EQ(FindNode(*it, "Map[1]")->parallelism.value.load(), 1);
  // A step now, after the elements: an idle machine gets through them
  // before the backed-off cadence comes round.
  auto* controller = dynamic_cast<AutotuneController*>(it->tuner());
  ASSERT_NE(controller, nullptr);
  ASSERT_TRUE(it->GetNext().ok());
  controller->Step();
  absl::StatusOr<AutotuneReport> r = it->AutotuneReport();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cpu_budget, 1);
  // Which kind the live run reports depends on timing (a loaded machine can
  // make the consumer look slowest); the classification "capped by the CPU
  // budget" is checked deterministically on recorded stats in model_test.cc.
  EXPECT_NE(r->bottleneck_kind, BottleneckKind::kUnknown) << r->ToString();
}

// A hand-made registry: the stats of Range -> Map -> Prefetch as a pipeline
// would report them, driven by the test.
struct FakePipeline {
  std::shared_ptr<StatsRegistry> registry = std::make_shared<StatsRegistry>();
  std::shared_ptr<NodeStats> range = registry->GetOrCreate("Range[0]", NodeKind::kSource);
  std::shared_ptr<NodeStats> map = registry->GetOrCreate("Map[1]", NodeKind::kAsync);
  std::shared_ptr<NodeStats> prefetch = registry->GetOrCreate("Prefetch[2]", NodeKind::kAsync);

  FakePipeline() {
    map->parallelism.present = true;
    map->parallelism.autotune = true;
    map->parallelism.min = 1;
    map->parallelism.max = 8;
    map->parallelism.value = 1;
    prefetch->buffer_size.present = true;
    prefetch->buffer_size.autotune = true;
    prefetch->buffer_size.min = 1;
    prefetch->buffer_size.max = 64;
    prefetch->buffer_size.value = 2;
  }
  // `n` elements through every node, the map costing `map_ns` each.
  void Produce(int64_t n, int64_t map_ns) {
    for (NodeStats* s : {range.get(), map.get(), prefetch.get()}) {
      s->elements_produced += n;
      s->bytes_produced += 8 * n;
    }
    range->busy_ns += 1000 * n;
    map->busy_ns += map_ns * n;
    prefetch->busy_ns += 1000 * n;
  }
};

TEST(AutotuneControllerTest, ConvergesOnRecordedStatsAndDoesNotOscillate) {
  FakePipeline p;
  Options none;
  AutotuneOptions ao;
  ao.cpu_budget = 4;
  ao.max_interval = milliseconds(20);
  auto c = AutotuneController::Start(p.registry, 4, none, ao);
  // 2 ms per element, with +-3% noise that must not move the knobs once set.
  for (int round = 0; round < 60; ++round) {
    p.Produce(100, round % 2 ? 2'060'000 : 1'940'000);
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(p.map->parallelism.value.load(), 4);
  const size_t changes = c->Report().history.size();
  for (int round = 0; round < 40; ++round) {
    p.Produce(100, round % 2 ? 2'060'000 : 1'940'000);
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(c->Report().history.size(), changes) << c->Report().ToString();
  EXPECT_EQ(c->Report().bottleneck_kind, BottleneckKind::kCpuBudget);
}

TEST(AutotuneControllerTest, FollowsLoadChanges) {
  // The map gets cheap next to a slow source: fewer workers suffice, but
  // hysteresis keeps them (no gain); it gets expensive again behind a fast
  // source: back up to the budget.
  FakePipeline p;
  Options none;
  AutotuneOptions ao;
  ao.cpu_budget = 3;
  ao.max_interval = milliseconds(20);
  auto c = AutotuneController::Start(p.registry, 3, none, ao);
  for (int round = 0; round < 40; ++round) {
    p.Produce(10, 100'000);  // 0.1 ms: one worker keeps up with anything here
    std::this_thread::sleep_for(milliseconds(5));
  }
  const int64_t cheap = p.map->parallelism.value.load();
  for (int round = 0; round < 60; ++round) {
    p.Produce(10, 3'000'000);
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_LE(cheap, 2);
  EXPECT_EQ(p.map->parallelism.value.load(), 3) << c->Report().ToString();
}

TEST(AutotuneControllerTest, ShrinksBuffersAtOnceWhenOverTheRamBudget) {
  FakePipeline p;
  Options none;
  AutotuneOptions ao;
  ao.ram_budget = 64 * kMiB;
  ao.first_interval = milliseconds(5000);  // only the RAM check runs
  ao.max_interval = milliseconds(5000);
  auto c = AutotuneController::Start(p.registry, 2, none, ao);
  p.prefetch->buffer_size.value = 32;
  p.prefetch->buffered_bytes = 32 * 8 * kMiB;  // 256 MiB held
  const auto start = steady_clock::now();
  while (p.prefetch->buffer_size.value.load() == 32 &&
         steady_clock::now() - start < milliseconds(2000)) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  p.prefetch->buffered_bytes = 0;  // the consumer drains the buffer
  EXPECT_LT(steady_clock::now() - start, milliseconds(500));
  // Scaled by budget / held: 32 x 64/256 (a second check before the drain
  // above may have halved it again).
  EXPECT_LE(p.prefetch->buffer_size.value.load(), 8);
  AutotuneReport r = c->Report();
  ASSERT_GE(r.history.size(), 1u);
  EXPECT_EQ(r.history[0].knob, "buffer_size");
  EXPECT_EQ(r.history[0].from, 32);
  EXPECT_EQ(r.history[0].to, 8);
  EXPECT_NE(r.history[0].reason.find("RAM budget"), std::string::npos);
  EXPECT_EQ(r.peak_observed_buffered_bytes, 256 * kMiB);
  // Fixed buffers are the user's: left alone.
  p.prefetch->buffer_size.autotune = false;
  p.prefetch->buffer_size.value = 32;
  p.prefetch->buffered_bytes = 32 * 8 * kMiB;
  EXPECT_FALSE(c->EnforceRamBudget());
  EXPECT_EQ(p.prefetch->buffer_size.value.load(), 32);
}

// Options for a test that takes the controller's steps itself.
AutotuneOptions SteppedByTheTest(int64_t ram_budget = 0) {
  AutotuneOptions ao;
  ao.cpu_budget = 2;
  ao.ram_budget = ram_budget;  // 0: the default
  ao.first_interval = milliseconds(60'000);
  ao.max_interval = milliseconds(60'000);
  ao.enforce_interval = milliseconds(60'000);
  return ao;
}

// `count` underruns of `n` in an interval whose consumer spent `wait_ns` in n's GetNext.
void RunDry(NodeStats& n, int64_t count, int64_t wait_ns) {
  n.underruns += count;
  n.wait_ns += wait_ns;
}

// A step a little later, so that the interval is not empty.
void StepLater(AutotuneController& c) {
  std::this_thread::sleep_for(milliseconds(2));
  c.Step();
}

bool SaysUnderruns(const KnobChange& k) {
  return k.reason.find("found the buffer empty") != std::string::npos;
}

// tf.data's prefetch autotuner's rule: a buffer that fills and then runs dry under its consumer,
// several times an interval with waits that matter, doubles, up to its maximum.
TEST(AutotuneControllerTest, DoublesABufferThatRunsDryAfterFilling) {
  FakePipeline p;
  auto c = AutotuneController::Start(p.registry, 2, Options(), SteppedByTheTest());
  for (int round = 0; round < 10; ++round) {
    // A map of 2 ms an element: the model's plan raises its parallelism meanwhile, and applying
    // that plan must not undo the deeper buffer.
    p.Produce(100, 2'000'000);
    RunDry(*p.prefetch, 5, 1'000'000'000);  // far above 2% of the interval
    StepLater(*c);
  }
  EXPECT_EQ(p.prefetch->buffer_size.value.load(), 64);
  EXPECT_EQ(p.map->parallelism.value.load(), 2);
  AutotuneReport r = c->Report();
  std::vector<KnobChange> deepened;
  for (const KnobChange& k : r.history) {
    if (SaysUnderruns(k)) deepened.push_back(k);
    if (k.node == "Prefetch[2]") {
      EXPECT_GT(k.to, k.from) << r.ToString();
    }
  }
  ASSERT_FALSE(deepened.empty()) << r.ToString();
  EXPECT_EQ(deepened[0].node, "Prefetch[2]");
  EXPECT_EQ(deepened[0].knob, "buffer_size");
  EXPECT_EQ(deepened[0].from, 2);
  EXPECT_EQ(deepened[0].to, 4);
  EXPECT_NE(deepened[0].reason.find("5 times after it had filled"), std::string::npos)
      << deepened[0].reason;
  for (const KnobChange& k : deepened) EXPECT_EQ(k.to, std::min<int64_t>(64, 2 * k.from));
}

TEST(AutotuneControllerTest, LeavesABufferAloneWhoseUnderrunsAreRareOrCostNothing) {
  FakePipeline p;
  auto c = AutotuneController::Start(p.registry, 2, Options(), SteppedByTheTest());
  for (int round = 0; round < 10; ++round) {
    p.Produce(100, 1000);
    if (round % 2 == 0) {
      RunDry(*p.prefetch, 5, 0);  // many, but the consumer hardly waited
    } else {
      RunDry(*p.prefetch, 1, 1'000'000'000);  // one stall of the producer: any buffer runs dry once
    }
    StepLater(*c);
  }
  for (const KnobChange& k : c->Report().history) EXPECT_FALSE(SaysUnderruns(k)) << k.reason;
}

TEST(AutotuneControllerTest, DeepensABufferOnlyAsFarAsTheRamBudgetAllows) {
  FakePipeline p;
  auto c = AutotuneController::Start(p.registry, 2, Options(), SteppedByTheTest(64 * kMiB));
  for (int round = 0; round < 10; ++round) {
    p.Produce(100, 1000);
    p.prefetch->bytes_produced += 100 * 8 * kMiB;  // 8 MiB elements
    RunDry(*p.prefetch, 5, 1'000'000'000);
    StepLater(*c);
  }
  const int64_t size = p.prefetch->buffer_size.value.load();
  EXPECT_GT(size, 2) << c->Report().ToString();
  EXPECT_LE(size * 8 * kMiB, 64 * kMiB) << c->Report().ToString();
}

TEST(AutotuneControllerTest, TwoDeepenedBuffersStayWithinTheRamBudgetTogether) {
  auto registry = std::make_shared<StatsRegistry>();
  auto range = registry->GetOrCreate("Range[0]", NodeKind::kSource);
  std::vector<std::shared_ptr<NodeStats>> prefetches = {
      registry->GetOrCreate("Prefetch[1]", NodeKind::kAsync),
      registry->GetOrCreate("Prefetch[2]", NodeKind::kAsync)};
  for (auto& n : prefetches) n->buffer_size.DeclareTunable(2, 1, 64);
  auto c = AutotuneController::Start(registry, 2, Options(), SteppedByTheTest(64 * kMiB));
  for (int round = 0; round < 10; ++round) {
    range->elements_produced += 100;
    range->bytes_produced += 100 * 8;
    range->busy_ns += 100 * 1000;
    for (auto& n : prefetches) {
      n->elements_produced += 100;
      n->bytes_produced += 100 * 4 * kMiB;  // 4 MiB elements
      n->busy_ns += 100 * 1000;
      RunDry(*n, 5, 1'000'000'000);
    }
    StepLater(*c);
  }
  const int64_t a = prefetches[0]->buffer_size.value.load();
  const int64_t b = prefetches[1]->buffer_size.value.load();
  EXPECT_GT(a + b, 4) << c->Report().ToString();
  EXPECT_LE((a + b) * 4 * kMiB, 64 * kMiB) << c->Report().ToString();
}

TEST(AutotuneControllerTest, NeverDeepensABufferPastWhereTheRamCheckCutIt) {
  FakePipeline p;
  auto c = AutotuneController::Start(p.registry, 2, Options(), SteppedByTheTest(64 * kMiB));
  p.prefetch->buffer_size.value = 32;
  p.prefetch->buffered_bytes = 32 * 8 * kMiB;  // held: 256 MiB, 4x the budget
  ASSERT_TRUE(c->EnforceRamBudget());
  const int64_t cut = p.prefetch->buffer_size.value.load();
  ASSERT_LE(cut, 8);
  p.prefetch->buffered_bytes = 0;  // drained
  for (int round = 0; round < 10; ++round) {
    p.Produce(100, 1000);  // 8-byte elements: the model alone would allow 64
    RunDry(*p.prefetch, 5, 1'000'000'000);
    StepLater(*c);
  }
  EXPECT_LE(p.prefetch->buffer_size.value.load(), cut) << c->Report().ToString();
}

// Live: Range into Prefetch(kAutotune), drained as fast as it comes. The producer outruns any
// consumer, so the model sees nothing for a deeper buffer to gain, but at the initial 2 elements
// every other element waits for a wake-up of the producer (45 us an element on a 2-core VM,
// against 1 us at 64; bench/dataset_overhead_bench's BM_Range_Prefetch).
TEST(AutotuneControllerTest, LiveRangePrefetchDeepensItsBufferForTheHandOffs) {
  auto it = Dataset::Range(int64_t{1} << 40).Prefetch(kAutotune).MakeIterator();
  MakeNodes(*it);
  auto prefetch = FindNode(*it, "Prefetch[1]");
  ASSERT_NE(prefetch, nullptr);
  const auto start = steady_clock::now();
  while (prefetch->buffer_size.value.load() <= 8 &&
         steady_clock::now() - start < milliseconds(20'000)) {
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(it->GetNext().ok());
  }
  EXPECT_GT(prefetch->buffer_size.value.load(), 8);
  absl::StatusOr<AutotuneReport> r = it->AutotuneReport();
  ASSERT_TRUE(r.ok()) << r.status();
  bool said = false;
  for (const KnobChange& k : r->history) said |= SaysUnderruns(k);
  EXPECT_TRUE(said) << r->ToString();
}

// The inputs a parallel Map pulls ahead into its window are not consumed until their results are
// handed on. The consumer's GetNext pulls them, so this is exact: 4 inputs (twice the
// parallelism) before the first result, up to the ordered window of 16 before the second; 17
// pulled, 2 handed on, 15 held. Counted as consumed, the ratio read 8.5.
TEST(AutotuneControllerTest, InputRatioCountsOnlyInputsHandedOn) {
  Options options;
  options.threads = 2;
  options.autotune = false;  // started below, stepped by the test
  auto it = Dataset::Range(1000)
                .Map(
                    [](Element e) -> absl::StatusOr<Element> {
                      Spin(std::chrono::microseconds(100));
                      return e;
                    },
                    {.num_parallel_calls = kAutotune})
                .WithOptions(options)
                .MakeIterator();
  MakeNodes(*it);
  auto c = AutotuneController::Start(*it, SteppedByTheTest());  // its first step: the baseline
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(it->GetNext().ok());
  auto range = FindNode(*it, "Range[0]");
  auto map = FindNode(*it, "Map[1]");
  ASSERT_NE(range, nullptr);
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(range->elements_produced.load() - map->elements_produced.load(),
            map->inputs_held.load());
  StepLater(*c);
  const AutotuneReport r = c->Report();
  ASSERT_GE(r.stages.size(), 2u);
  ASSERT_EQ(r.stages[1].name, "Map[1]");
  EXPECT_NEAR(r.stages[1].input_ratio, 1.0, 0.01) << r.ToString();
}

// A Concatenate makes its second input's nodes when the first input ends, after every node above
// it. The model keeps the pipeline's root (the WithOptions over the Prefetch) as its root, the
// last stage of the report, and the second input's Map as a node of its own; in registry order
// that Map was taken for the root, the caller's thread.
TEST(AutotuneControllerTest, AConcatenatesSecondInputIsModelledBelowTheRoot) {
  Options options;
  options.threads = 2;
  options.autotune = false;  // started below, stepped by the test
  auto spin = [](Element e) -> absl::StatusOr<Element> {
    Spin(std::chrono::microseconds(100));
    return e;
  };
  auto it = Dataset::Range(10)
                .Map(spin, {.num_parallel_calls = kAutotune})
                .Concatenate(Dataset::Range(1000).Map(spin, {.num_parallel_calls = kAutotune}))
                .Prefetch(kAutotune)
                .WithOptions(options)
                .MakeIterator();
  MakeNodes(*it);
  auto c = AutotuneController::Start(*it, SteppedByTheTest());
  for (int step = 0; step < 2; ++step) {
    for (int i = 0; i < 30; ++i) ASSERT_TRUE(it->GetNext().ok());  // into the second input
    StepLater(*c);
  }
  const AutotuneReport r = c->Report();
  ASSERT_EQ(r.stages.size(), 7u) << r.ToString();
  EXPECT_EQ(r.stages.back().name, "WithOptions[4]") << r.ToString();
  EXPECT_EQ(r.stages[5].name, "Prefetch[3]") << r.ToString();
  EXPECT_EQ(r.stages[3].name, "Concatenate[2].1:Map[1]") << r.ToString();
  EXPECT_EQ(r.stages[4].name, "Concatenate[2]") << r.ToString();
  EXPECT_EQ(r.stages[4].input_ratio, 0) << "two inputs: no one ratio";
  EXPECT_GT(r.stages[3].self_us, 50) << "measured as a node of its own: " << r.ToString();
}

// A RAM report's "down then up": for each node's knob, whether a change raised it after an
// earlier one had lowered it.
bool SomeKnobWentDownThenUp(const std::vector<KnobChange>& history) {
  std::map<std::string, bool> lowered;
  for (const KnobChange& k : history) {
    bool& down = lowered[k.node + " " + k.knob];
    if (k.to > k.from && down) return true;
    if (k.to < k.from) down = true;
  }
  return false;
}

// A Shuffle holds 100 MiB, over the 64 MiB budget by itself; no knob holds those bytes. The RAM
// check used to cut the Map and the Prefetch for them, and the next step, whose model did not
// see the Shuffle, raised them back: about 100 changes a second, the budget never met, the
// history without bound. Now the check says once that the budget cannot be met, and the knobs
// stay put.
TEST(AutotuneControllerTest, UntunableBytesDoNotMakeTheKnobsThrash) {
  auto registry = std::make_shared<StatsRegistry>();
  auto range = registry->GetOrCreate("Range[0]", NodeKind::kSource);
  auto shuffle = registry->GetOrCreate("Shuffle[1]", NodeKind::kSync);
  auto map = registry->GetOrCreate("Map[2]", NodeKind::kAsync);
  auto prefetch = registry->GetOrCreate("Prefetch[3]", NodeKind::kAsync);
  shuffle->buffer_size.DeclareFixed(10'000);
  map->parallelism.DeclareTunable(/*initial=*/2, /*lo=*/1, /*hi=*/8);
  prefetch->buffer_size.DeclareTunable(/*initial=*/4, /*lo=*/1, /*hi=*/64);
  shuffle->buffered_bytes = 100 * kMiB;
  map->buffered_bytes = 128;
  prefetch->buffered_bytes = 16;
  AutotuneOptions ao = SteppedByTheTest(64 * kMiB);
  ao.cpu_budget = 4;
  auto c = AutotuneController::Start(registry, 4, Options(), ao);
  for (int round = 0; round < 30; ++round) {
    for (NodeStats* n : {range.get(), shuffle.get(), map.get(), prefetch.get()}) {
      n->elements_produced += 100;
      n->bytes_produced += 8 * 100;
      n->busy_ns += (n == map.get() ? 2'000'000 : 1000) * 100;
    }
    // The RAM checks between two steps, then the step.
    c->EnforceRamBudget();
    c->EnforceRamBudget();
    StepLater(*c);
  }
  const AutotuneReport r = c->Report();
  EXPECT_LT(r.history.size(), 10u) << r.ToString();
  EXPECT_FALSE(SomeKnobWentDownThenUp(r.history)) << r.ToString();
  EXPECT_EQ(std::count_if(r.history.begin(), r.history.end(),
                          [](const KnobChange& k) {
                            return k.reason.find("RAM budget") != std::string::npos;
                          }),
            0)
      << r.ToString();
  ASSERT_EQ(r.warnings.size(), 1u) << r.ToString();
  EXPECT_NE(r.warnings[0].find("Shuffle[1] alone holds 100.0 MiB"), std::string::npos)
      << r.warnings[0];
  EXPECT_NE(r.ToString().find("warning: RAM budget 64.0 MiB cannot be met"), std::string::npos);
  EXPECT_NE(r.ToJson().find("\"warnings\": [\"RAM budget"), std::string::npos) << r.ToJson();
}

// Over the budget, the RAM check scales the knobs' share of the bytes to what the budget leaves
// beside the bytes no knob holds: 40 MiB of a Shuffle leave 24 MiB of 64 for a Prefetch that
// holds 48 MiB at 32 elements, so it goes to 16 (budget / held, 64/88, gave 23: still over).
TEST(AutotuneControllerTest, RamCheckScalesOnlyTheTunableShare) {
  FakePipeline p;
  auto shuffle = p.registry->GetOrCreate("Shuffle[3]", NodeKind::kSync);
  shuffle->buffer_size.DeclareFixed(1000);
  shuffle->buffered_bytes = 40 * kMiB;
  auto c = AutotuneController::Start(p.registry, 2, Options(), SteppedByTheTest(64 * kMiB));
  p.prefetch->buffer_size.value = 32;
  p.prefetch->buffered_bytes = 48 * kMiB;
  ASSERT_TRUE(c->EnforceRamBudget());
  EXPECT_EQ(p.prefetch->buffer_size.value.load(), 16);
  EXPECT_TRUE(c->Report().warnings.empty());
}

// What the RAM check cut, here a Map's parallelism (its finished results hold the bytes), the
// model's plan does not raise again, though more workers would be faster, until the bytes held
// have stayed at most half the budget for 20 steps.
TEST(AutotuneControllerTest, ThePlanKeepsAKnobWhereTheRamCheckCutIt) {
  FakePipeline p;
  auto c = AutotuneController::Start(p.registry, 2, Options(), SteppedByTheTest(64 * kMiB));
  p.map->parallelism.value = 2;
  p.map->buffered_bytes = 256 * kMiB;
  ASSERT_TRUE(c->EnforceRamBudget());
  ASSERT_EQ(p.map->parallelism.value.load(), 1);
  p.map->buffered_bytes = 0;  // drained
  for (int round = 0; round < 10; ++round) {
    p.Produce(100, 2'000'000);  // 2 ms an element: 2 workers would be twice as fast
    StepLater(*c);
  }
  EXPECT_EQ(p.map->parallelism.value.load(), 1) << c->Report().ToString();
  for (int round = 0; round < 15; ++round) {
    p.Produce(100, 2'000'000);
    StepLater(*c);
  }
  EXPECT_EQ(p.map->parallelism.value.load(), 2) << c->Report().ToString();
}

// The report keeps the last kMaxHistory changes and counts the rest: a controller that runs for
// days keeps bounded memory, and Report() copies a bounded history.
TEST(AutotuneControllerTest, HistoryKeepsTheLastChangesAndCountsTheRest) {
  FakePipeline p;
  auto c = AutotuneController::Start(p.registry, 2, Options(), SteppedByTheTest(64 * kMiB));
  const int64_t changes = AutotuneController::kMaxHistory + 100;
  for (int64_t i = 0; i < changes; ++i) {
    p.prefetch->buffer_size.value = 32;
    p.prefetch->buffered_bytes = 32 * 8 * kMiB;  // 4x the budget: cut to 8
    ASSERT_TRUE(c->EnforceRamBudget());
  }
  const AutotuneReport r = c->Report();
  EXPECT_EQ(r.history.size(), AutotuneController::kMaxHistory);
  EXPECT_EQ(r.history_dropped, 100);
  EXPECT_NE(r.ToString().find("(100 earlier changes dropped)"), std::string::npos);
  EXPECT_NE(r.ToJson().find("\"history_dropped\": 100"), std::string::npos);
}

TEST(AutotuneControllerTest, StopsPromptlyWhenDestroyed) {
  FakePipeline p;
  Options none;
  AutotuneOptions ao;
  ao.first_interval = milliseconds(10);
  ao.max_interval = milliseconds(10000);
  ao.enforce_interval = milliseconds(10000);
  auto c = AutotuneController::Start(p.registry, 2, none, ao);
  p.Produce(10, 1'000'000);
  std::this_thread::sleep_for(milliseconds(100));  // now in a long wait
  const auto start = steady_clock::now();
  c.reset();
  EXPECT_LT(steady_clock::now() - start, milliseconds(100));

  // And straight after Start.
  const auto start2 = steady_clock::now();
  AutotuneController::Start(p.registry, 2, none, ao).reset();
  EXPECT_LT(steady_clock::now() - start2, milliseconds(100));
}

TEST(AutotuneControllerTest, DefaultRamBudgetIsHalfOfAvailableMemory) {
  const int64_t b = DefaultRamBudget();
  EXPECT_GT(b, 16 * kMiB);
  Options none;
  auto c = AutotuneController::Start(std::make_shared<StatsRegistry>(), 3, none);
  EXPECT_EQ(c->cpu_budget(), 3);
  EXPECT_NEAR(static_cast<double>(c->ram_budget()), static_cast<double>(b), 0.5 * b);
}

// A budget of 0 would read as no limit to the model and as nothing allowed to the controller's
// RAM checks: a MemAvailable of 0 (a container under pressure) gives the floor instead.
TEST(AutotuneControllerTest, TheDefaultRamBudgetIsNeverZero) {
  std::istringstream plenty("MemTotal: 8000000 kB\nMemAvailable: 4000000 kB\n");
  EXPECT_EQ(RamBudgetFromMeminfo(plenty), int64_t{4000000} * 1024 / 2);
  std::istringstream none_left("MemTotal: 8000000 kB\nMemAvailable: 0 kB\n");
  EXPECT_EQ(RamBudgetFromMeminfo(none_left), kMinDefaultRamBudget);
  std::istringstream unnamed("MemTotal: 8000000 kB\n");
  EXPECT_EQ(RamBudgetFromMeminfo(unnamed), int64_t{1} << 30);
}

}  // namespace
}  // namespace sluice
