#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "core/buffer.h"
#include "dataset/node_stats.h"
#include "dataset/proto/iterator_state.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::Ints;
using ::sluice::testing::Iota;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

Element Times(const Element& e, int64_t k) {
  return {Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() * k)};
}

class MapTest : public ::testing::TestWithParam<int> {};

TEST_P(MapTest, AppliesFunctionInOrder) {
  auto ds = Dataset::Range(100).Map([](Element e) { return Times(e, 3); },
                                    {.num_parallel_calls = GetParam()});
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 100; ++i) want.push_back(3 * i);
  EXPECT_THAT(Ints(*out), ElementsAreArray(want));
  EXPECT_EQ(ds.Cardinality(), 100);
}

TEST_P(MapTest, EmptyInput) {
  auto out = Collect(
      Dataset::Range(0).Map([](Element e) { return e; }, {.num_parallel_calls = GetParam()}));
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->empty());
}

TEST_P(MapTest, EndOfSequenceRepeats) {
  auto it = Dataset::Range(2)
                .Map([](Element e) { return e; }, {.num_parallel_calls = GetParam()})
                .MakeIterator();
  ASSERT_TRUE(Drain(*it).ok());
  for (int i = 0; i < 3; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok());
    EXPECT_FALSE(e->has_value());
  }
}

TEST_P(MapTest, ErrorNamesNodeAndElementAndIsSticky) {
  auto ds = Dataset::Range(10)
                .Map([](Element e) { return e; })
                .Map(
                    [](Element e) -> absl::StatusOr<Element> {
                      if (e[0].scalar<int64_t>() == 7) return absl::InvalidArgumentError("bad");
                      return e;
                    },
                    {.num_parallel_calls = GetParam()});
  auto it = ds.MakeIterator();
  auto got = Drain(*it);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(), "Map[2] at element 7: bad");
  auto again = it->GetNext();
  EXPECT_EQ(again.status(), got.status());
}

// A function whose allocation fails (a decode of an image too large for the machine) is an
// error like any other: oneTBB would abort the process on an exception leaving its worker.
TEST_P(MapTest, AnAllocationThatFailsIsResourceExhausted) {
  auto ds = Dataset::Range(10).Map(
      [](Element e) -> absl::StatusOr<Element> {
        if (e[0].scalar<int64_t>() == 3) (void)Buffer::Allocate(SIZE_MAX - 10);  // throws
        return e;
      },
      {.num_parallel_calls = GetParam()});
  auto got = Drain(*ds.MakeIterator());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("Map[1] at element 3: out of memory"));
  // A node running in the consumer's thread, too.
  auto filtered = Collect(Dataset::Range(10).Filter([](const Element& e) -> absl::StatusOr<bool> {
    if (e[0].scalar<int64_t>() == 5) (void)Buffer::Allocate(SIZE_MAX - 10);
    return true;
  }));
  EXPECT_EQ(filtered.status().code(), absl::StatusCode::kResourceExhausted) << filtered.status();
}

// A user's function that throws (an .at() out of range) is an error in its element's place, on a
// worker thread too: an exception leaving a oneTBB task aborted the process.
TEST_P(MapTest, AFunctionThatThrowsIsAnErrorNamingTheException) {
  auto ds = Dataset::Range(10).Map(
      [](Element e) -> absl::StatusOr<Element> {
        if (e[0].scalar<int64_t>() == 3) throw std::out_of_range("user bug at 3");
        return e;
      },
      {.num_parallel_calls = GetParam()});
  auto got = Drain(*ds.MakeIterator());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnknown) << got.status();
  EXPECT_THAT(got.status().message(),
              HasSubstr("Map[1] at element 3: a function threw a C++ exception: user bug at 3"));
  auto filtered = Collect(Dataset::Range(10).Filter([](const Element& e) -> absl::StatusOr<bool> {
    if (e[0].scalar<int64_t>() == 5) throw 42;  // not even a std::exception
    return true;
  }));
  EXPECT_EQ(filtered.status().code(), absl::StatusCode::kUnknown) << filtered.status();
  EXPECT_THAT(filtered.status().message(), HasSubstr("no std::exception"));
}

TEST_P(MapTest, PerElementSeedsAreReproducibleAcrossParallelism) {
  auto make = [](int parallel) {
    return Dataset::Range(50)
        .Map(
            [](Element, const ElementContext& c) -> absl::StatusOr<Element> {
              return Element{Tensor::Scalar<int64_t>(static_cast<int64_t>(c.seed >> 1))};
            },
            {.num_parallel_calls = parallel})
        .WithOptions({.seed = 42});
  };
  auto a = Collect(make(GetParam()));
  auto b = Collect(make(1));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(Ints(*a), Ints(*b));
  const std::vector<int64_t> seeds = Ints(*a);
  std::set<int64_t> distinct(seeds.begin(), seeds.end());
  EXPECT_EQ(distinct.size(), 50u);  // Each element its own seed.
  auto c = Collect(make(GetParam()).WithOptions({.seed = 43}));
  EXPECT_NE(Ints(*c), Ints(*a));
}

TEST_P(MapTest, CheckpointResumesExactly) {
  auto ds = Dataset::Range(30).Map([](Element e) { return Times(e, 2); },
                                   {.num_parallel_calls = GetParam()});
  testing::ExpectCheckpointsResumeExactly(ds, {0, 1, 5, 29, 30});
}

INSTANTIATE_TEST_SUITE_P(Parallelism, MapTest, ::testing::Values(1, 2, 8, kAutotune));

// The node's name goes in front of a failed call's message, and the payloads the function put on
// its status stay (how the Python module finds a Python function's exception again).
TEST_P(MapTest, AFailedCallIsNamedAndKeepsItsPayloads) {
  auto ds = Dataset::Range(10).Map(
      [](Element e) -> absl::StatusOr<Element> {
        if (e[0].scalar<int64_t>() != 3) return e;
        absl::Status s = absl::InvalidArgumentError("bad value");
        s.SetPayload("sluice.dev/test", absl::Cord("three"));
        return s;
      },
      {.num_parallel_calls = GetParam()});
  absl::StatusOr<std::vector<Element>> out = Collect(ds);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("at element 3: bad value"));
  ASSERT_TRUE(out.status().GetPayload("sluice.dev/test").has_value());
  EXPECT_EQ(*out.status().GetPayload("sluice.dev/test"), "three");
}

TEST(MapTest, NonDeterministicYieldsEveryElement) {
  auto ds = Dataset::Range(200).Map(
      [](Element e) -> absl::StatusOr<Element> {
        if (e[0].scalar<int64_t>() % 7 == 0)
          std::this_thread::sleep_for(std::chrono::microseconds(300));
        return e;
      },
      {.num_parallel_calls = 4, .deterministic = false});
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok());
  auto v = Ints(*out);
  std::sort(v.begin(), v.end());
  EXPECT_EQ(v, Iota(0, 200));
}

// Destroying the iterator waits for the calls under way (no user code runs after it, as in
// tf.data) and starts none of the queued ones, so it takes at most one call's time.
TEST(MapTest, DestroyingMidStreamWaitsForTheCallsUnderWayOnly) {
  std::atomic<int> started{0}, finished{0};
  auto ds = Dataset::Range(1000).Map(
      [&started, &finished](Element e) -> absl::StatusOr<Element> {
        ++started;
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ++finished;
        return e;
      },
      {.num_parallel_calls = 2});
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());  // waits for the first call (300 ms); others run meanwhile
  // A call under way: the workers go on with the queued inputs (each sleeps 300 ms).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (started.load() == finished.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_GT(started.load(), finished.load()) << "no call under way to wait for";
  const auto t0 = std::chrono::steady_clock::now();
  it.reset();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_EQ(finished.load(), started.load());  // nothing runs after the iterator is gone
  EXPECT_LT(ms, 300 + testing::kCancelBudgetMs);
  const int at_destruction = started.load();
  EXPECT_LT(at_destruction, 10);  // of the 1,000: the queued calls never started
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(started.load(), at_destruction);
}

TEST(MapTest, StatsCountElementsAndBusyTime) {
  auto ds = Dataset::Range(20).Map(
      [](Element e) -> absl::StatusOr<Element> {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return e;
      },
      {.num_parallel_calls = 2});
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it).ok());
  auto stats = it->Stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].name, "Range[0]");
  EXPECT_EQ(stats[1].name, "Map[1]");
  EXPECT_EQ(stats[1].elements_produced, 20);
  EXPECT_EQ(stats[1].bytes_produced, 20 * 8);
  EXPECT_GE(stats[1].busy_ns, 20 * 1'000'000);
  EXPECT_EQ(stats[1].parallelism, 2);
}

// A call the consumer runs itself (rather than sleep until a worker is free) is busy time, not
// time waiting on the workers: AUTOTUNE would otherwise see both, and raise the parallelism of a
// Map whose consumer was busy, not waiting.
TEST(MapTest, CallsTheConsumerRunsAreNotCountedAsWaiting) {
  const std::thread::id consumer = std::this_thread::get_id();
  std::atomic<int64_t> inline_ns{0};
  auto ds = Dataset::Range(300).Map(
      [&](Element e) -> absl::StatusOr<Element> {
        const auto start = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        if (std::this_thread::get_id() == consumer) {
          inline_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count();
        }
        return e;
      },
      {.num_parallel_calls = 2});
  auto it = ds.MakeIterator();
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(Drain(*it).ok());
  const int64_t wall_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  const NodeStatsSnapshot map = it->Stats()[1];
  // The consumer's time in the Map is at most the wall time; the calls it ran itself are not in
  // its waiting time. (Counted twice, wait_ns would reach the wall time again.)
  EXPECT_LE(map.wait_ns, wall_ns - inline_ns.load() / 2)
      << "inline " << inline_ns.load() << " ns of " << wall_ns << " ns";
}

// Finished results waiting for the consumer count in the node's buffered bytes (for AUTOTUNE's
// RAM budget), and leave it when returned.
TEST(MapTest, BufferedResultsCountTheirBytes) {
  auto it = Dataset::Range(10)
                .Map([](Element e) { return Times(e, 2); }, {.num_parallel_calls = 2})
                .MakeIterator();
  auto first = it->GetNext();
  ASSERT_TRUE(first.ok() && first->has_value());
  // Four calls (twice the parallelism) were under way; three remain, 8 bytes each once done.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int64_t bytes = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    bytes = it->Stats()[1].buffered_bytes;
    if (bytes == 3 * 8) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(bytes, 3 * 8);
  EXPECT_EQ(it->Stats()[1].buffered_elements, 3);
  ASSERT_TRUE(Drain(*it).ok());
  EXPECT_EQ(it->Stats()[1].buffered_bytes, 0);
}

// The inputs in the window (queued, running or done) are held, not consumed, until their results
// are handed on (NodeStats::inputs_held, which AUTOTUNE's input ratio subtracts); a destroyed
// iterator takes what it still held out of the count.
TEST(MapTest, CountsTheInputsItsWindowHolds) {
  auto it = Dataset::Range(1000)
                .Map([](Element e) { return Times(e, 2); }, {.num_parallel_calls = 2})
                .MakeIterator();
  // The consumer's GetNext pulls the inputs: none is pulled between the two calls.
  ASSERT_TRUE(Drain(*it, 2).ok());
  std::vector<NodeStatsSnapshot> stats = it->Stats();
  ASSERT_EQ(stats[1].name, "Map[1]");
  EXPECT_GT(stats[1].inputs_held, 0);
  EXPECT_EQ(stats[1].inputs_held, stats[0].elements_produced - stats[1].elements_produced);
  std::shared_ptr<StatsRegistry> registry = it->stats_registry();
  it.reset();
  EXPECT_EQ(registry->Snapshot()[1].inputs_held, 0);

  // A failed call consumed its input too.
  auto failing = Dataset::Range(1000)
                     .Map(
                         [](Element e) -> absl::StatusOr<Element> {
                           if (e[0].scalar<int64_t>() == 7) return absl::InvalidArgumentError("7");
                           return e;
                         },
                         {.num_parallel_calls = 2})
                     .MakeIterator();
  ASSERT_TRUE(Drain(*failing, 7).ok());
  ASSERT_FALSE(failing->GetNext().ok());
  stats = failing->Stats();
  EXPECT_EQ(stats[1].inputs_held, stats[0].elements_produced - stats[1].elements_produced - 1);

  // Drained to the end: none left.
  auto ended = Dataset::Range(50)
                   .Map([](Element e) { return Times(e, 2); }, {.num_parallel_calls = 3})
                   .MakeIterator();
  ASSERT_TRUE(Drain(*ended).ok());
  EXPECT_EQ(ended->Stats()[1].inputs_held, 0);
}

// In input order, a slow call must not stall the workers: once the results' size is known the
// window is kMinOrderedWindow (16) results, not 2 x parallelism (4), so the calls after a slow
// one run while it does. (With the narrow window, 8's call held back everything after 11.)
TEST(MapTest, OrderedWorkersRunPastASlowCallWithinTheWindow) {
  absl::Notification release;
  std::atomic<int64_t> highest_started{-1};
  auto it = Dataset::Range(100)
                .Map(
                    [&](Element e) -> absl::StatusOr<Element> {
                      const int64_t i = e[0].scalar<int64_t>();
                      int64_t seen = highest_started.load();
                      while (i > seen && !highest_started.compare_exchange_weak(seen, i)) {
                      }
                      if (i == 8) release.WaitForNotificationWithTimeout(absl::Seconds(10));
                      return e;
                    },
                    {.num_parallel_calls = 2, .deterministic = true})
                .MakeIterator();
  for (int64_t i = 0; i < 8; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value());
    ASSERT_EQ((**e)[0].scalar<int64_t>(), i);
  }
  std::thread consumer([&] {
    auto e = it->GetNext();  // 8, held until `release`
    EXPECT_TRUE(e.ok() && e->has_value() && (**e)[0].scalar<int64_t>() == 8);
  });
  // Results 8 to 23 fill the window; the calls of 9 to 23 start while 8's is held.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (highest_started.load() < 8 + kMinOrderedWindow - 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(highest_started.load(), 8 + kMinOrderedWindow - 1);  // and not past the window
  release.Notify();
  consumer.join();
  auto rest = Drain(*it);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(Ints(*rest), Iota(9, 100));
}

// Out of order nothing is held back, and the window stays 2 x parallelism.
TEST(MapTest, UnorderedWindowIsTwiceTheParallelism) {
  auto it = Dataset::Range(100)
                .Map([](Element e) { return Times(e, 2); },
                     {.num_parallel_calls = 2, .deterministic = false})
                .MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  EXPECT_EQ(it->stats_registry()->Nodes()[1]->min_window.load(), 0);
}

// Found by iterator_restore_fuzzer (a timeout in CI): a parallel Map's checkpoint saying its input
// had ended, without the end marker in its buffer. Restored, GetNext waited for a call that nothing
// would ever start: a hang, not an error.
TEST(MapTest, ParallelRestoreRefusesAnEndedInputWithoutItsEndMarker) {
  auto ds = Dataset::Range(3).Map([](Element e) { return e; }, {.num_parallel_calls = 2});
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it).ok());  // to the end: input ended, end marker buffered
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  proto::IteratorCheckpoint checkpoint;
  ASSERT_TRUE(checkpoint.ParseFromString(*saved));
  proto::IteratorStateProto* map = checkpoint.mutable_root();
  ASSERT_EQ(map->ints().at("input_ended"), 1);
  ASSERT_GT(map->buffer_size(), 0);
  {  // As saved, it restores and ends.
    auto fresh = ds.MakeIterator();
    ASSERT_TRUE(fresh->Restore(checkpoint.SerializeAsString()).ok());
    auto next = fresh->GetNext();
    ASSERT_TRUE(next.ok());
    EXPECT_FALSE(next->has_value());
  }
  map->clear_buffer();
  auto fresh = ds.MakeIterator();
  absl::Status s = fresh->Restore(checkpoint.SerializeAsString());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("inconsistent end of input"));
}

// A parallel Map over another one saves on a one-thread pool without a deadlock. Its worker
// tasks can sit queued when its consumer has run their calls itself (short calls run inline);
// such a task, started later, takes the Map's lock, finds nothing and leaves. The outer Map once
// held its lock while saving its input: the stale task then held the pool's only thread waiting
// for that lock while the inner Map's save waited for a task of its own (a hang first seen in
// CI, in ElementSourceFilesTest.ThePipelineOfSluiceBenchResumesFromSources on a 2-core AVX2
// EPYC). A watchdog turns a hang into a failure that says so.
TEST(MapTest, NestedParallelMapsSaveOnAOneThreadPool) {
  const auto add = [](Element e) { return Times(e, 1); };
  const Dataset ds = Dataset::Range(1000000)
                         .Map(add, {.num_parallel_calls = 2})
                         .Map(add, {.num_parallel_calls = 2})
                         .WithOptions({.threads = 1});
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 600 && !done.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!done.load()) {
      std::fprintf(stderr, "MapTest.NestedParallelMapsSaveOnAOneThreadPool: Save hung (60 s)\n");
      std::abort();
    }
  });
  for (int round = 0; round < 300; ++round) {
    auto it = ds.MakeIterator();
    for (int i = 0; i <= round % 5; ++i) ASSERT_TRUE(it->GetNext().ok());
    ASSERT_TRUE(it->Save().ok()) << "round " << round;
  }
  done = true;
  watchdog.join();
}

}  // namespace
}  // namespace sluice
