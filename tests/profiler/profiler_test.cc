// The profiler (profiler/profiler.h, core/trace_recorder.h): per-thread nesting, the ring
// buffer's drop count, the Chrome JSON it writes (parsed back), the pipeline's node spans, Fit's
// step phases, and no allocation when off.
#include "profiler/profiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <new>
#include <set>
#include <thread>

#include "dataset/dataset.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "profiler/trace_summary.h"
#include "tests/file_util.h"
#include "tests/train/fit_test_util.h"
#include "train/fit/trainer.h"
#include "train/optimizers/sgd.h"

// A counting allocator for this binary: operator new counts the calls made while a thread's
// counting flag is up (the test of "off allocates nothing"). ThreadSanitizer's runtime defines
// operator new itself, so under it the allocator and its test are left out.
#if defined(__SANITIZE_THREAD__)
#define SLUICE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SLUICE_TSAN 1
#endif
#endif
namespace {
thread_local bool counting = false;
thread_local int64_t allocations = 0;
}  // namespace
#ifndef SLUICE_TSAN
// GCC sees a malloc'd pointer reach a free through an inlined delete and warns; they match here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
  if (counting) ++allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// The nothrow form too (std::stable_sort's buffer): a sanitizer's own would not match our free.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (counting) ++allocations;
  return std::malloc(n == 0 ? 1 : n);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
#endif  // SLUICE_TSAN

namespace sluice::profiler {
namespace {

using ::sluice::testing::ReadFile;
using ::testing::HasSubstr;
using ::testing::Not;

std::string TempDir(const std::string& name) {
  return ::testing::TempDir() + "/profiler_test_" + name + "_" + std::to_string(getpid());
}

// The trace's complete events, parsed back from the JSON: per tid, (name, cat, ts, dur) in us.
struct Parsed {
  struct Event {
    std::string name, cat;
    double ts, dur;
  };
  std::map<int64_t, std::vector<Event>> spans;
  std::map<std::string, int> counters;
  std::map<int64_t, std::string> thread_names;
};

Parsed ParseTrace(const std::string& json) {
  google::protobuf::Struct root;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &root).ok());
  Parsed out;
  for (const google::protobuf::Value& v : root.fields().at("traceEvents").list_value().values()) {
    const auto& f = v.struct_value().fields();
    const std::string ph = f.at("ph").string_value();
    if (ph == "X") {
      out.spans[static_cast<int64_t>(f.at("tid").number_value())].push_back(
          {f.at("name").string_value(), f.at("cat").string_value(), f.at("ts").number_value(),
           f.at("dur").number_value()});
    } else if (ph == "C") {
      ++out.counters[f.at("name").string_value()];
    } else if (ph == "M" && f.at("name").string_value() == "thread_name") {
      out.thread_names[static_cast<int64_t>(f.at("tid").number_value())] =
          f.at("args").struct_value().fields().at("name").string_value();
    }
  }
  return out;
}

// Spans on one thread either nest or are disjoint.
void ExpectNested(const std::vector<Parsed::Event>& events) {
  for (const auto& a : events) {
    for (const auto& b : events) {
      const double a_end = a.ts + a.dur, b_end = b.ts + b.dur;
      const bool disjoint = a_end <= b.ts + 1e-3 || b_end <= a.ts + 1e-3;
      const bool a_in_b = a.ts >= b.ts - 1e-3 && a_end <= b_end + 1e-3;
      const bool b_in_a = b.ts >= a.ts - 1e-3 && b_end <= a_end + 1e-3;
      EXPECT_TRUE(disjoint || a_in_b || b_in_a) << a.name << " and " << b.name << " overlap";
    }
  }
}

TEST(ProfilerTest, SpansNestPerThreadAndTheJsonParses) {
  const std::string dir = TempDir("nest");
  ASSERT_TRUE(Start(dir, {.counter_interval_ms = 1}).ok());
  EXPECT_EQ(Start(dir).code(), absl::StatusCode::kFailedPrecondition);
  auto work = [] {
    Span outer("test", "outer");
    for (int i = 0; i < 3; ++i) {
      Span inner("test", "inner");
      Span innermost("test", "innermost");
    }
  };
  std::thread t1(work), t2(work);
  t1.join();
  t2.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a few counter samples
  absl::StatusOr<Report> report = Stop();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->dropped, 0);
  Parsed trace = ParseTrace(ReadFile(report->trace_path));
  int threads_with_outer = 0;
  for (const auto& [tid, events] : trace.spans) {
    ExpectNested(events);
    int outer = 0, inner = 0;
    for (const auto& e : events) {
      outer += e.name == "outer";
      inner += e.name == "inner";
    }
    if (outer == 1) {
      ++threads_with_outer;
      EXPECT_EQ(inner, 3);
    }
  }
  EXPECT_EQ(threads_with_outer, 2);
  EXPECT_GT(trace.counters["rss_bytes"], 0);
  EXPECT_TRUE(std::filesystem::exists(report->tensorboard_path));
  EXPECT_THAT(report->tensorboard_path, HasSubstr("/plugins/profile/"));
  EXPECT_EQ(Stop().status().code(), absl::StatusCode::kFailedPrecondition);
  std::filesystem::remove_all(dir);
}

TEST(ProfilerTest, AFullRingDropsTheOldestAndCountsThem) {
  const std::string dir = TempDir("ring");
  ASSERT_TRUE(Start(dir, {.events_per_thread = 8, .counter_interval_ms = 0}).ok());
  for (int i = 0; i < 20; ++i) RecordSpan("test", i < 12 ? "old" : "new", i * 10, i * 10 + 5);
  absl::StatusOr<Report> report = Stop();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->dropped, 12);
  EXPECT_EQ(report->events, 8);
  Parsed trace = ParseTrace(ReadFile(report->trace_path));
  ASSERT_EQ(trace.spans.size(), 1u);
  for (const auto& e : trace.spans.begin()->second) EXPECT_EQ(e.name, "new");
  EXPECT_THAT(report->summary, HasSubstr("12 events were dropped"));
  std::filesystem::remove_all(dir);
}

TEST(ProfilerTest, OffRecordsAndAllocatesNothing) {
#ifdef SLUICE_TSAN
  GTEST_SKIP() << "ThreadSanitizer defines operator new: no counting allocator in this build";
#endif
  ASSERT_FALSE(Active());
  counting = true;
  allocations = 0;
  for (int i = 0; i < 1000; ++i) {
    Span span("test", "off");
    RecordSpan("test", "off", 0, 1);
    RecordCounter("off", 1);
  }
  counting = false;
  EXPECT_EQ(allocations, 0);
  // And a pipeline's GetNext adds nothing of the profiler's: its allocations are the
  // elements' own, the same with the profiler compiled in as without (counted per element).
  Dataset d = Dataset::Range(100).Map([](Element e) -> absl::StatusOr<Element> { return e; });
  std::unique_ptr<Iterator> it = d.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());  // builds the pipeline
  counting = true;
  allocations = 0;
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(it->GetNext().ok());
  counting = false;
  const int64_t per_element_off = allocations;
  const std::string dir = TempDir("pipeline_on");
  ASSERT_TRUE(Start(dir, {.counter_interval_ms = 0}).ok());
  ASSERT_TRUE(it->GetNext().ok());  // the node names are interned once, here
  counting = true;
  allocations = 0;
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(it->GetNext().ok());
  counting = false;
  ASSERT_TRUE(Stop().ok());
  // Recording on allocates nothing per event either (the rings are allocated at their first
  // event); the element counts differ (50 vs 40), so compare per element.
  EXPECT_LE(allocations * 50, per_element_off * 40);
  std::filesystem::remove_all(dir);
}

TEST(ProfilerTest, PipelineSpansNameTheNodes) {
  const std::string dir = TempDir("pipeline");
  // Calls of 200 us: before recording starts the pipeline runs at most about 40 elements ahead (2
  // prefetched batches, one being filled, the Map's window of 16), so the rest are made while
  // recording, slower than the loop below takes them, and the consumer waits on the Prefetch.
  // (With instant calls a Map's wider window could fill the Prefetch ahead of every take.)
  Dataset d = Dataset::Range(64)
                  .Map(
                      [](Element e) -> absl::StatusOr<Element> {
                        std::this_thread::sleep_for(std::chrono::microseconds(200));
                        return e;
                      },
                      {.num_parallel_calls = 2})
                  .Batch(8)
                  .Prefetch(2);
  std::unique_ptr<Iterator> it = d.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());  // makes the nodes, which the counters then read
  ASSERT_TRUE(Start(dir, {.counter_interval_ms = 1}).ok());
  while (true) {
    absl::StatusOr<std::optional<Element>> e = it->GetNext();
    ASSERT_TRUE(e.ok());
    if (!e->has_value()) break;
  }
  absl::StatusOr<Report> report = Stop();
  ASSERT_TRUE(report.ok()) << report.status();
  std::set<std::string> names;
  Parsed trace = ParseTrace(ReadFile(report->trace_path));
  for (const auto& [tid, events] : trace.spans) {
    ExpectNested(events);
    for (const auto& e : events) names.insert(e.cat + ":" + e.name);
  }
  for (const char* want :
       {"pipeline:Range[0]", "pipeline:Map[1]", "pipeline:Batch[2]", "pipeline:Prefetch[3]",
        "map:Map[1] call", "prefetch:Prefetch[3] wait"}) {
    EXPECT_TRUE(names.count(want)) << want << " missing";
  }
  EXPECT_THAT(report->summary, HasSubstr("Slowest pipeline node: "));
  // The sampler's first sample, taken as recording starts, has the pipeline's counters.
  EXPECT_GT(trace.counters["Prefetch[3] buffer_size"], 0);
  EXPECT_GT(trace.counters["Prefetch[3] buffered_elements"], 0);
  EXPECT_GT(trace.counters["Map[1] parallelism"], 0);
  EXPECT_GT(trace.counters["rss_bytes"], 0);
  std::filesystem::remove_all(dir);
}

TEST(ProfilerTest, TheSlowestNodeCountsItsWorkersCallsNotItsWaits) {
  // A parallel Map that spins 300 us an element: its calls run on worker threads, and the
  // consumer's waits for them (and Prefetch's) are not work.
  auto spin = [](Element e) -> absl::StatusOr<Element> {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(300);
    while (std::chrono::steady_clock::now() < until) {
    }
    return e;
  };
  Dataset d = Dataset::Range(200).Map(spin, {.num_parallel_calls = 2}).Batch(10).Prefetch(2);
  const std::string dir = TempDir("slowest");
  ASSERT_TRUE(Start(dir, {.counter_interval_ms = 0}).ok());
  std::unique_ptr<Iterator> it = d.MakeIterator();
  while (true) {
    absl::StatusOr<std::optional<Element>> e = it->GetNext();
    ASSERT_TRUE(e.ok());
    if (!e->has_value()) break;
  }
  absl::StatusOr<Report> report = Stop();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->summary, HasSubstr("Slowest pipeline node: Map[1] ("));
  std::filesystem::remove_all(dir);
}

// One epoch of `trainer` on 96 blobs in batches of 8 (12 steps), profiling `steps` into `dir`:
// Fit's result and the progress it printed.
std::pair<absl::StatusOr<train::fit::History>, std::string> FitProfiling(
    train::fit::Trainer& trainer, std::pair<int64_t, int64_t> steps, const std::string& dir) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* progress = open_memstream(&buf, &len);
  absl::StatusOr<train::fit::History> h =
      trainer.Fit(train::testing::BlobsDataset(96, 1, 8), {.epochs = 1,
                                                           .verbose = 2,
                                                           .progress_stream = progress,
                                                           .profile_steps = steps,
                                                           .profile_dir = dir});
  std::fclose(progress);
  std::string text(buf, len);
  std::free(buf);
  return {std::move(h), std::move(text)};
}

// Eager (TrainerOptions::run_eagerly): layers and backward ops by name. Compiled: the replayed
// kernels by name. In both the phases partition each step.
class FitProfileTest : public ::testing::TestWithParam<bool> {};

TEST_P(FitProfileTest, FitStepPhasesPartitionEachStep) {
  const bool eager = GetParam();
  auto model = train::testing::TinyModel(1);
  train::optimizers::Sgd sgd;
  train::fit::Trainer trainer(*model, sgd, {.run_eagerly = eager});
  const std::string dir = TempDir("fit");
  auto [h, progress_text] = FitProfiling(trainer, {3, 7}, dir);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_THAT(progress_text, HasSubstr("Step time: 5 steps"));
  EXPECT_THAT(progress_text, HasSubstr("Verdict: "));
  // The step's time by phase, as each mode has them: a compiled step's replay is one phase.
  if (eager) {
    EXPECT_THAT(progress_text, HasSubstr(", forward "));
    EXPECT_THAT(progress_text, HasSubstr(", backward "));
    EXPECT_THAT(progress_text, Not(HasSubstr("replayed")));
  } else {
    EXPECT_THAT(progress_text, HasSubstr(", step (replayed) "));
    EXPECT_THAT(progress_text, Not(HasSubstr(", forward 0")));
  }
  Parsed trace = ParseTrace(ReadFile(dir + "/trace.json"));
  int steps = 0;
  std::set<std::string> backward_ops, layers, replayed;
  for (const auto& [tid, events] : trace.spans) {
    ExpectNested(events);
    for (const auto& step : events) {
      if (step.cat != "step") continue;
      ++steps;
      double phases = 0;
      for (const auto& p : events) {
        if (p.cat == "phase" && p.ts >= step.ts - 1e-3 &&
            p.ts + p.dur <= step.ts + step.dur + 1e-3) {
          phases += p.dur;
        }
      }
      // The phases (input, prepare, forward, loss, backward, optimizer, metrics, logs,
      // callbacks) add up to the step's wall time.
      EXPECT_NEAR(phases, step.dur, 0.01 * step.dur) << "step at " << step.ts;
    }
    for (const auto& e : events) {
      if (e.cat == "backward") backward_ops.insert(e.name);
      if (e.cat == "forward") layers.insert(e.name);
      if (e.cat == "replay") replayed.insert(e.name);
    }
  }
  EXPECT_EQ(steps, 5);
  if (eager) {
    EXPECT_TRUE(backward_ops.count("MatMulBias"));  // a dense layer's fused op
    EXPECT_TRUE(layers.count("layer 0 (dense)"));
    EXPECT_TRUE(layers.count("layer 2 (dense)"));
    EXPECT_TRUE(replayed.empty());
  } else {
    // The first step is traced eagerly; steps 3..7 are replays.
    EXPECT_TRUE(replayed.count("MatMulBias"));  // a dense layer's forward
    EXPECT_TRUE(replayed.count("MatMul"));      // and its gradients
    EXPECT_TRUE(replayed.count("SparseSoftmaxCrossEntropy"));
    EXPECT_TRUE(replayed.count("UnaryBackward"));
    EXPECT_TRUE(layers.empty());
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Modes, FitProfileTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Eager" : "Compiled";
                         });

// A window past the run's last step profiles nothing, and says so instead of leaving no trace.
TEST(FitProfileWindowTest, AWindowThatNeverOpensIsNamed) {
  auto model = train::testing::TinyModel(1);
  train::optimizers::Sgd sgd;
  train::fit::Trainer trainer(*model, sgd);
  const std::string dir = TempDir("never");
  auto [h, progress_text] = FitProfiling(trainer, {50, 60}, dir);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_THAT(progress_text,
              HasSubstr("profile_steps 50:60: not profiled; the steps this Fit ran: 1 to 12"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/trace.json"));
}

// A window Fit ends inside profiles the steps it reached, and names those it did not.
TEST(FitProfileWindowTest, AWindowCutShortNamesTheStepsLeftOut) {
  auto model = train::testing::TinyModel(1);
  train::optimizers::Sgd sgd;
  train::fit::Trainer trainer(*model, sgd);
  const std::string dir = TempDir("cut");
  auto [h, progress_text] = FitProfiling(trainer, {10, 20}, dir);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_THAT(progress_text,
              HasSubstr("profile_steps 10:20: steps 13 to 20 not profiled; this Fit ended at "
                        "step 12"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/trace.json"));
  std::filesystem::remove_all(dir);
}

// What the CUDA backend's KernelTimer (gpu/kernel_timer.h) does, without a GPU: spans timed
// elsewhere, held back, and recorded by Stop's flush hook on a track of their own.
TEST(ProfilerTest, FlushHooksRecordDeviceSpansOnTheirOwnTrack) {
  const std::string dir = TempDir("track");
  int flushes = 0;
  int64_t t0 = 0;
  const int hook = RegisterFlushHook([&] {
    ++flushes;
    EXPECT_TRUE(Active()) << "a flush hook runs while the profile still records";
    RecordTrackSpan("cuda:7", "kernel", "MatMul", t0 + 1'000'000, t0 + 3'000'000);
    RecordTrackSpan("cuda:7", "kernel", "Relu", t0 + 2'500'000, t0 + 3'500'000);
  });
  ASSERT_TRUE(Start(dir, {.counter_interval_ms = 0}).ok());
  t0 = NowNs();
  RecordSpan("step", "step", t0, t0 + 5'000'000);
  absl::StatusOr<Report> report = Stop();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(flushes, 1);
  Parsed trace = ParseTrace(ReadFile(report->trace_path));
  int64_t track = -1;
  for (const auto& [tid, name] : trace.thread_names) {
    if (name == "cuda:7") track = tid;
  }
  ASSERT_GE(track, kFirstTrackTid) << "the track's tid is above any thread's";
  ASSERT_EQ(trace.spans[track].size(), 2u);
  const Parsed::Event& matmul = trace.spans[track][0];
  const Parsed::Event& step = trace.spans.begin()->second[0];
  EXPECT_EQ(matmul.name, "MatMul");
  EXPECT_EQ(matmul.cat, "kernel");
  EXPECT_NEAR(matmul.ts - step.ts, 1000, 1e-3);  // us, on the host spans' clock
  EXPECT_NEAR(matmul.dur, 2000, 1e-3);
  // Busy 2.5 ms (the two overlap by 0.5) of the 5 ms step; kernels are not host ops.
  EXPECT_THAT(report->summary, HasSubstr("Device cuda:7: busy 50.0% of the steps' time"));
  EXPECT_THAT(report->summary, ::testing::ContainsRegex("MatMul +1 calls +2.00 ms"));
  const std::string host_ops = report->summary.substr(0, report->summary.find("Device"));
  EXPECT_THAT(host_ops, ::testing::Not(HasSubstr("MatMul")));

  UnregisterFlushHook(hook);
  ASSERT_TRUE(Start(dir, {.counter_interval_ms = 0}).ok());
  report = Stop();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(flushes, 1) << "an unregistered hook is not called";
  EXPECT_THAT(report->summary, ::testing::Not(HasSubstr("cuda:7")))
      << "a track with nothing in this profile is left out";
  std::filesystem::remove_all(dir);
}

// A step whose device is busy nearly all of it is device-bound, however long the host waited for
// input meanwhile (its input's copies queue behind the device's kernels); below 90% busy the
// input share decides, as before.
TEST(ProfilerTest, AnAlmostAlwaysBusyDeviceMakesTheVerdictDeviceBound) {
  const auto threads_with_busy = [](int64_t busy_end) {
    return std::vector<ThreadTrace>{
        {.tid = 1,
         .name = "main",
         .events = {{"step", "step", 0, 100, 0, false}, {"phase", "input", 0, 80, 1, false}}},
        {.tid = kFirstTrackTid,
         .name = "cuda:0",
         .events = {TraceEvent{"kernel", "CudaGraph", 0, busy_end, 0, false}}},
    };
  };
  EXPECT_THAT(Summarize(threads_with_busy(95), 0),
              HasSubstr("Verdict: device-bound: cuda:0 is busy 95.0% of the step time (the host "
                        "waits for it, 80.0% of the step in input)"));
  EXPECT_THAT(Summarize(threads_with_busy(50), 0),
              HasSubstr("Verdict: input-bound: 80.0% of the step time waits for input"));
}

// The step line names a device wait (Fit bounding how far the host runs ahead of a device) only
// where the host waited for one.
TEST(ProfilerTest, TheStepLineShowsADeviceWaitOnlyWhereThereIsOne) {
  const auto steps = [](bool waits) {
    std::vector<TraceEvent> events = {{"step", "step", 0, 100, 0, false},
                                      {"phase", "input", 0, 20, 1, false},
                                      {"phase", "forward_backward", 20, 50, 1, false}};
    if (waits) events.push_back({"phase", "device_wait", 70, 30, 1, false});
    return std::vector<ThreadTrace>{{.tid = 1, .name = "main", .events = events}};
  };
  EXPECT_THAT(Summarize(steps(true), 0),
              HasSubstr(": input 20.0%, step (replayed) 50.0%, optimizer 0.0%, metrics 0.0%, "
                        "device wait 30.0%, other 0.0%\n"));
  EXPECT_THAT(Summarize(steps(false), 0),
              HasSubstr(": input 20.0%, step (replayed) 50.0%, optimizer 0.0%, metrics 0.0%, "
                        "other 30.0%\n"));
}

// A device's utilisation is the union of its spans within the steps' window.
TEST(ProfilerTest, DeviceBusyTimeIsTheUnionOfItsSpansWithinTheSteps) {
  const auto span = [](const char* name, int64_t start, int64_t end) {
    return TraceEvent{"kernel", name, start, end - start, 0, false};
  };
  std::vector<ThreadTrace> threads = {
      {.tid = 1, .name = "main", .events = {{"step", "step", 0, 50, 0, false}}},
      {.tid = kFirstTrackTid,
       .name = "cuda:0",
       // [0, 10) and [5, 20) overlap: 20; [30, 40): 10; [45, 60) counts up to the steps' end: 5.
       .events = {span("a", 0, 10), span("b", 5, 20), span("a", 30, 40), span("c", 45, 60)}},
  };
  const TraceStats stats = ComputeStats(threads);
  ASSERT_EQ(stats.devices.size(), 1u);
  EXPECT_EQ(stats.devices[0].track, "cuda:0");
  EXPECT_EQ(stats.devices[0].spans, 4);
  EXPECT_EQ(stats.devices[0].busy_ns, 35);
  EXPECT_EQ(stats.devices[0].window_ns, 50);

  // Without steps, the window is the kernels' own: 0 to 60, busy 20 + 10 + 15.
  threads.erase(threads.begin());
  const TraceStats alone = ComputeStats(threads);
  ASSERT_EQ(alone.devices.size(), 1u);
  EXPECT_EQ(alone.devices[0].busy_ns, 45);
  EXPECT_EQ(alone.devices[0].window_ns, 60);
}

}  // namespace
}  // namespace sluice::profiler
