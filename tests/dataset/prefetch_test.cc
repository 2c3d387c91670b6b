#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "dataset/dataset_base.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::Ints;
using ::sluice::testing::Iota;
using ::sluice::testing::TestContext;
using ::testing::ElementsAreArray;

// Range(n) whose elements count themselves in `pulled` as they are made.
Dataset Counting(int64_t n, std::shared_ptr<std::atomic<int64_t>> pulled) {
  return Dataset::Range(n).Map([pulled](Element e) -> absl::StatusOr<Element> {
    pulled->fetch_add(1);
    return e;
  });
}

Dataset FailingAt(int64_t n, std::set<int64_t> bad) {
  return Dataset::Range(n).Map([bad](Element e) -> absl::StatusOr<Element> {
    if (bad.count(e[0].scalar<int64_t>())) return absl::InvalidArgumentError("bad");
    return e;
  });
}

// Polls `done` for up to 5 s.
bool WaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

NodeStats* FindNode(Iterator& it, const std::string& name) {
  for (const auto& n : it.stats_registry()->Nodes()) {
    if (n->name == name) return n.get();
  }
  return nullptr;
}

class PrefetchTest : public ::testing::TestWithParam<int> {};

TEST_P(PrefetchTest, PreservesOrder) {
  auto ds = Dataset::Range(100)
                .Map([](Element e) -> absl::StatusOr<Element> {
                  return Element{Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() * 3)};
                })
                .Prefetch(GetParam());
  EXPECT_EQ(ds.Cardinality(), 100);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 100; ++i) want.push_back(3 * i);
  EXPECT_THAT(Ints(*out), ElementsAreArray(want));
}

TEST_P(PrefetchTest, EmptyInputAndEndOfSequenceAtEveryPosition) {
  for (int64_t n : {0, 1, 2, 3, 9}) {
    auto it = Dataset::Range(n).Prefetch(GetParam()).MakeIterator();
    auto got = Drain(*it);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(Ints(*got), Iota(0, n));
    for (int i = 0; i < 3; ++i) {
      auto e = it->GetNext();
      ASSERT_TRUE(e.ok());
      EXPECT_FALSE(e->has_value());
    }
  }
}

TEST_P(PrefetchTest, ErrorsAreDeliveredInOrderAndIterationContinues) {
  auto ds = FailingAt(10, {3, 6}).Prefetch(GetParam());  // outlives its iterators
  auto it = ds.base()->MakeIterator(TestContext());
  ASSERT_TRUE(it.ok());
  std::vector<std::string> seen;
  while (true) {
    auto e = (*it)->GetNext();
    if (!e.ok()) {
      seen.push_back(std::string(e.status().message()));
      continue;
    }
    if (!e->has_value()) break;
    seen.push_back(std::to_string((**e)[0].scalar<int64_t>()));
  }
  EXPECT_THAT(seen, ::testing::ElementsAre("0", "1", "2", "Map[1] at element 3: bad", "4", "5",
                                           "Map[1] at element 6: bad", "7", "8", "9"));
}

TEST_P(PrefetchTest, UserIteratorErrorIsSticky) {
  auto it = FailingAt(10, {3}).Prefetch(GetParam()).MakeIterator();
  auto got = Drain(*it);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "Map[1] at element 3: bad");
  EXPECT_EQ(it->GetNext().status(), got.status());
  EXPECT_EQ(it->GetNext().status(), got.status());
}

TEST_P(PrefetchTest, CheckpointResumesExactly) {
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(20).Prefetch(GetParam()),
                                          {0, 1, 2, 5, 19, 20});
  // A slow input: Save finds the producer inside a pull and waits for it.
  auto slow = Dataset::Range(12)
                  .Map([](Element e) -> absl::StatusOr<Element> {
                    std::this_thread::sleep_for(std::chrono::milliseconds(2));
                    return e;
                  })
                  .Prefetch(GetParam());
  testing::ExpectCheckpointsResumeExactly(slow, {0, 3, 11, 12});
}

INSTANTIATE_TEST_SUITE_P(BufferSize, PrefetchTest, ::testing::Values(1, 2, 8, kAutotune));

TEST(PrefetchTest, BufferBoundIsRespected) {
  for (int64_t size : {1, 3}) {
    auto pulled = std::make_shared<std::atomic<int64_t>>(0);
    auto it = Counting(1000, pulled).Prefetch(size).MakeIterator();
    ASSERT_TRUE(Drain(*it, 2).ok());
    // It runs ahead by exactly `size` elements, and no further.
    EXPECT_TRUE(WaitFor([&] { return pulled->load() == 2 + size; })) << pulled->load();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(pulled->load(), 2 + size);
    auto stats = it->Stats();
    ASSERT_EQ(stats.size(), 3u);
    EXPECT_EQ(stats[2].name, "Prefetch[2]");
    EXPECT_EQ(stats[2].buffer_size, size);
    EXPECT_EQ(stats[2].buffered_elements, size);
    EXPECT_EQ(stats[2].buffered_bytes, 8 * size);
    EXPECT_EQ(stats[2].elements_produced, 2);
  }
}

TEST(PrefetchTest, AutotuneStartsAtTwoAndFollowsTheKnob) {
  auto pulled = std::make_shared<std::atomic<int64_t>>(0);
  auto it = Counting(1000, pulled).Prefetch(kAutotune).MakeIterator();
  ASSERT_TRUE(Drain(*it, 1).ok());
  EXPECT_TRUE(WaitFor([&] { return pulled->load() == 3; })) << pulled->load();
  NodeStats* node = FindNode(*it, "Prefetch[2]");
  ASSERT_NE(node, nullptr);
  EXPECT_TRUE(node->buffer_size.present);
  EXPECT_TRUE(node->buffer_size.autotune);
  EXPECT_EQ(node->buffer_size.value.load(), 2);
  EXPECT_EQ(node->buffer_size.min, 1);
  EXPECT_EQ(node->buffer_size.max, 64);
  // What the AUTOTUNE controller does: the next decision reads the new value.
  node->buffer_size.value = 6;
  ASSERT_TRUE(Drain(*it, 1).ok());
  EXPECT_TRUE(WaitFor([&] { return pulled->load() == 2 + 6; })) << pulled->load();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(pulled->load(), 8);
  // Shrinking stops the producer until the buffer drains below the new size.
  node->buffer_size.value = 1;
  ASSERT_TRUE(Drain(*it, 4).ok());  // 6 consumed, 2 left buffered
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(pulled->load(), 8);
}

// An underrun (what AUTOTUNE deepens an autotuned buffer for): the consumer finds the buffer empty
// after the producer had filled it. Waiting for a producer that never got ahead is none.
TEST(PrefetchTest, CountsAnUnderrunWhenTheConsumerFindsAFilledBufferEmpty) {
  testing::BlockingMapGate gate;
  auto it = Dataset::Range(10).Map(gate.Fn()).Prefetch(2).WithOptions({}).MakeIterator();
  ASSERT_TRUE(Drain(*it, 1).ok());  // waited for the first element: the buffer had never filled
  NodeStats* node = FindNode(*it, "Prefetch[2]");
  ASSERT_NE(node, nullptr);
  // 1 and 2 fill the buffer, and the producer stops there.
  ASSERT_TRUE(WaitFor([&] { return node->buffered_elements.load() == 2; }));
  gate.Arm();  // the producer's next pull (3, after a pop makes room) blocks
  ASSERT_TRUE(Drain(*it, 2).ok());
  EXPECT_EQ(node->underruns.load(), 0);  // 1 and 2 were there
  // The next GetNext finds the buffer empty: one underrun, then the element once released.
  std::thread releaser([&] {
    WaitFor([&] { return node->underruns.load() > 0; });
    gate.Release();
  });
  auto three = it->GetNext();
  releaser.join();
  ASSERT_TRUE(three.ok() && three->has_value());
  EXPECT_EQ(testing::Value(**three), 3);
  EXPECT_EQ(node->underruns.load(), 1);
}

// The elements in the buffer are held, not consumed, until the consumer takes them
// (NodeStats::inputs_held, which AUTOTUNE's input ratio subtracts); elements a checkpoint restored
// are not (the input never handed them over), and a destroyed iterator takes what it still held
// out of the count.
TEST(PrefetchTest, CountsTheInputsItsBufferHolds) {
  const Dataset ds = Dataset::Range(20).Prefetch(5);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 3).ok());
  NodeStats* node = FindNode(*it, "Prefetch[1]");
  ASSERT_NE(node, nullptr);
  // The producer stops at a full buffer.
  EXPECT_TRUE(WaitFor([&] { return node->inputs_held.load() == 5; })) << node->inputs_held.load();
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  std::shared_ptr<StatsRegistry> registry = it->stats_registry();
  it.reset();
  EXPECT_EQ(registry->Snapshot()[1].inputs_held, 0);

  auto restored = ds.MakeIterator();
  ASSERT_TRUE(restored->Restore(*saved).ok());
  auto rest = Drain(*restored);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->size(), 17u);
  EXPECT_EQ(restored->Stats()[1].inputs_held, 0);
}

TEST(PrefetchTest, BufferedErrorsSurviveACheckpoint) {
  auto ds = FailingAt(10, {3, 6}).Prefetch(8);
  auto ctx = TestContext();
  auto it = ds.base()->MakeIterator(ctx);
  ASSERT_TRUE(it.ok());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE((*it)->GetNext().ok());
  // Let the buffer fill so the saved buffer holds both errors.
  NodeStats* node = ctx.stats->GetOrCreate("Prefetch[2]", NodeKind::kAsync).get();
  ASSERT_TRUE(WaitFor([&] { return node->buffered_elements.load() == 8; }));
  proto::IteratorStateProto state;
  ASSERT_TRUE((*it)->Save(&state).ok());
  EXPECT_EQ(state.buffer_size(), 8);
  it->reset();
  auto fresh = ds.base()->MakeIterator(TestContext());
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE((*fresh)->Restore(state).ok());
  std::vector<std::string> seen;
  while (true) {
    auto e = (*fresh)->GetNext();
    if (!e.ok()) {
      seen.push_back(std::string(e.status().message()));
      EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    if (!e->has_value()) break;
    seen.push_back(std::to_string((**e)[0].scalar<int64_t>()));
  }
  EXPECT_THAT(seen, ::testing::ElementsAre("2", "Map[1] at element 3: bad", "4", "5",
                                           "Map[1] at element 6: bad", "7", "8", "9"));
}

// The producer is woken at once; the Map under it waits for its calls under way (at most one
// call's time) and starts none of the queued ones.
TEST(PrefetchTest, DestroyingWhileTheProducerIsBlockedInASlowMapReturnsQuickly) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = Dataset::Range(1000)
                .Map(
                    [calls](Element e) -> absl::StatusOr<Element> {
                      ++*calls;
                      std::this_thread::sleep_for(std::chrono::milliseconds(300));
                      return e;
                    },
                    {.num_parallel_calls = 2})
                .Prefetch(4);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 1).ok());  // ~300 ms; the producer now waits on slow calls.
  ASSERT_TRUE(WaitFor([&] { return calls->load() >= 3; }));
  const auto t0 = std::chrono::steady_clock::now();
  it.reset();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_LT(ms, 300 + testing::kCancelBudgetMs);
  const int at_destruction = calls->load();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(calls->load(), at_destruction);  // no call started after the iterator was gone
}

TEST(PrefetchTest, DestroyingWithAFullBufferOrBeforeStartingReturnsQuickly) {
  for (bool start : {false, true}) {
    auto it = Dataset::Range(1000).Prefetch(2).MakeIterator();
    if (start) {
      ASSERT_TRUE(Drain(*it, 1).ok());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // buffer full, producer waits
    const auto t0 = std::chrono::steady_clock::now();
    it.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
  }
}

// A restore recomputes the saved elements through the input (a map function's time); a
// cancellation meanwhile returns at once instead of waiting for it: Prefetch restores without
// the lock its cancellation callback takes. Before, the callback waited for the whole restore.
TEST(PrefetchTest, CancellingDuringARestoreDoesNotWaitForIt) {
  testing::BlockingMapGate gate;
  const Dataset ds = Dataset::Range(100).Map(gate.Fn()).Prefetch(4);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 2).ok());
  ASSERT_TRUE(WaitFor([&] { return it->Stats().back().buffered_elements >= 4; }));
  absl::StatusOr<std::string> saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_TRUE(testing::CancellationReturnsDuringRestore(ds, *saved, gate));
}

// Iterator::WaitForNext (Python's next() waits with it): it waits for the final Prefetch's buffer
// without taking anything, says kNotYet at the deadline, and is kUnknown where it cannot tell.
TEST(PrefetchTest, WaitForNextWaitsForTheBufferWithoutTakingAnElement) {
  const auto soon = [] { return std::chrono::steady_clock::now() + std::chrono::milliseconds(20); };
  const auto later = [] { return std::chrono::steady_clock::now() + std::chrono::seconds(30); };
  testing::BlockingMapGate gate;
  const Dataset ds = Dataset::Range(10).Map(gate.Fn()).Prefetch(1).WithOptions({});
  auto it = ds.MakeIterator();
  EXPECT_EQ(it->WaitForNext(later()), NextReadiness::kUnknown);  // the producer starts at GetNext
  ASSERT_TRUE(Drain(*it, 1).ok());
  gate.Arm();  // the next call of the map function blocks
  // Take what comes until the producer is blocked in it and the buffer has run dry.
  std::vector<int64_t> got = {0};
  while (true) {
    const NextReadiness r = it->WaitForNext(soon());
    if (r == NextReadiness::kReady) {
      auto e = it->GetNext();
      ASSERT_TRUE(e.ok() && e->has_value());
      got.push_back(testing::Value(**e));
      continue;
    }
    ASSERT_EQ(r, NextReadiness::kNotYet);
    if (gate.entered().HasBeenNotified()) break;
  }
  EXPECT_EQ(it->WaitForNext(soon()), NextReadiness::kNotYet);
  gate.Release();
  while (true) {
    ASSERT_EQ(it->WaitForNext(later()), NextReadiness::kReady);
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok());
    if (!e->has_value()) break;
    got.push_back(testing::Value(**e));
  }
  EXPECT_EQ(got, Iota(0, 10));  // nothing skipped or repeated by the waits
  EXPECT_EQ(it->WaitForNext(later()), NextReadiness::kReady);  // the end stays at hand
  // The waits count as the Prefetch's wait (what AUTOTUNE takes for the consumer waiting): the
  // 20 ms ones alone add up to more than the element's own 0 ms of GetNext.
  const auto stats = it->Stats();
  const auto prefetch = std::find_if(stats.begin(), stats.end(), [](const NodeStatsSnapshot& s) {
    return s.name == "Prefetch[2]";
  });
  ASSERT_NE(prefetch, stats.end());
  EXPECT_GE(prefetch->wait_ns, 20'000'000);

  // Restored, the Prefetch has buffered elements but no producer until GetNext: it cannot tell.
  absl::StatusOr<std::string> saved;
  {
    auto first = Dataset::Range(10).Prefetch(4).MakeIterator();
    ASSERT_TRUE(Drain(*first, 2).ok());
    saved = first->Save();
    ASSERT_TRUE(saved.ok()) << saved.status();
  }
  auto restored = Dataset::Range(10).Prefetch(4).MakeIterator();
  ASSERT_TRUE(restored->Restore(*saved).ok());
  EXPECT_EQ(restored->WaitForNext(later()), NextReadiness::kUnknown);
  auto rest = Drain(*restored);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(Ints(*rest), Iota(2, 10));

  // Without a final Prefetch the iterator cannot tell; with a sticky error it can.
  auto plain = Dataset::Range(3).MakeIterator();
  ASSERT_TRUE(Drain(*plain, 1).ok());
  EXPECT_EQ(plain->WaitForNext(later()), NextReadiness::kUnknown);
  auto failing =
      Dataset::Range(3)
          .Map([](Element) -> absl::StatusOr<Element> { return absl::InvalidArgumentError("bad"); })
          .MakeIterator();
  EXPECT_FALSE(failing->GetNext().ok());
  EXPECT_EQ(failing->WaitForNext(later()), NextReadiness::kReady);
}

// Prefetch(0) is no prefetch, as tf.data's prefetch(0) (which its graph rewrite removes).
TEST(PrefetchTest, ZeroIsNoPrefetchAndANegativeSizeIsAnError) {
  const Dataset none = Dataset::Range(3).Prefetch(0);
  EXPECT_EQ(none.DebugString(), "Range(0, 3, 1)");
  auto all = Collect(none);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 3u);
  auto got = Collect(Dataset::Range(3).Prefetch(-2));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "Prefetch[1]: buffer_size must be >= 0 or AUTOTUNE (-1), got -2");
  EXPECT_EQ(Dataset::Range(3).Prefetch(kAutotune).DebugString(),
            "Range(0, 3, 1) -> Prefetch(autotune)");
}

}  // namespace
}  // namespace sluice
