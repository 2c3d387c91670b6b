#include "dataset/iterator.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

TEST(IteratorTest, InitializeMakesNodesWithoutStartingWork) {
  // Shared, not on this stack: a parallel Map's calls still running when the iterator is
  // destroyed finish on their own (the destructor returns at once), after this test may have
  // returned (TSan saw one write into the returned frame).
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = Dataset::Range(10).Map(
      [calls](Element e) -> absl::StatusOr<Element> {
        ++*calls;
        return e;
      },
      {.num_parallel_calls = 2});
  auto it = ds.MakeIterator();
  EXPECT_TRUE(it->Stats().empty());
  ASSERT_TRUE(it->Initialize().ok());
  ASSERT_TRUE(it->Initialize().ok());  // Idempotent.
  auto stats = it->Stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[1].name, "Map[1]");
  EXPECT_EQ(stats[1].parallelism, 2);
  EXPECT_EQ(calls->load(), 0);  // The parallel Map starts at the first GetNext.
  auto first = it->GetNext();
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((**first)[0].scalar<int64_t>(), 0);
}

// Iterator states hold protobuf maps, written in hash order unless told otherwise: two iterators
// at the same position save the same bytes.
TEST(IteratorTest, TheSamePositionSavesTheSameBytes) {
  std::vector<std::string> saved;
  for (int i = 0; i < 3; ++i) {
    // Built anew: a second iterator of one dataset is another iteration (another order).
    auto ds = Dataset::Range(100)
                  .Shuffle(10, {.seed = 3})
                  .Batch(3)
                  .Concatenate(Dataset::Range(5))
                  .WithOptions({.seed = 1});
    auto it = ds.MakeIterator();
    for (int n = 0; n < 4; ++n) ASSERT_TRUE(it->GetNext().ok());
    absl::StatusOr<std::string> state = it->Save();
    ASSERT_TRUE(state.ok()) << state.status();
    saved.push_back(*std::move(state));
  }
  EXPECT_EQ(saved[1], saved[0]);
  EXPECT_EQ(saved[2], saved[0]);
}

TEST(IteratorTest, InitializeReportsCreationErrorsStickily) {
  auto it = Dataset::Range(0, 10, 0).MakeIterator();  // step 0 is invalid
  absl::Status s = it->Initialize();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(it->GetNext().status(), s);
  // A negative thread count meant all cores; an empty checkpoint told of "version 0".
  auto negative = Dataset::Range(3).WithOptions({.threads = -3}).MakeIterator();
  EXPECT_EQ(negative->GetNext().status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(negative->GetNext().status().message(),
            "Options::threads must be >= 0 (0: the default), got -3");
  absl::Status empty = Dataset::Range(3).MakeIterator()->Restore("");
  EXPECT_EQ(empty.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(empty.message(),
            "iterator checkpoint is empty (0 bytes): not what Iterator::Save returned");
}

// A stand-in for AUTOTUNE (dataset/ does not link autotune/): records what
// the iterator showed it when it was made, and when it was destroyed.
struct TunerLog {
  int made = 0;
  int destroyed = 0;
  size_t nodes_when_made = 0;
  bool nodes_alive_at_destruction = false;
  std::weak_ptr<NodeStats> map;
};
TunerLog* tuner_log = nullptr;

class FakeTuner : public IteratorTuner {
 public:
  ~FakeTuner() override {
    ++tuner_log->destroyed;
    // The iterator stops its tuner before it tears its nodes down.
    tuner_log->nodes_alive_at_destruction = !tuner_log->map.expired();
  }
};

std::unique_ptr<IteratorTuner> MakeFakeTuner(const Iterator& it) {
  ++tuner_log->made;
  tuner_log->nodes_when_made = it.Stats().size();
  for (const auto& n : it.stats_registry()->Nodes()) {
    if (n->name == "Map[1]") tuner_log->map = n;
  }
  return std::make_unique<FakeTuner>();
}

// Installs the fake factory for one test, and puts back what was there.
class IteratorTunerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_ = GetIteratorTunerFactory();
    tuner_log = &log_;
    SetIteratorTunerFactory(&MakeFakeTuner);
  }
  void TearDown() override {
    SetIteratorTunerFactory(previous_);
    tuner_log = nullptr;
  }
  TunerLog log_;
  IteratorTunerFactory previous_ = nullptr;
};

Dataset AutotunedMap(Options options) {
  return Dataset::Range(100)
      .Map([](Element e) -> absl::StatusOr<Element> { return e; },
           {.num_parallel_calls = kAutotune})
      .WithOptions(options);
}

TEST_F(IteratorTunerTest, MadeOnceWithTheNodesAndDestroyedFirst) {
  auto it = AutotunedMap({}).MakeIterator();
  EXPECT_EQ(log_.made, 0);
  EXPECT_EQ(it->tuner(), nullptr);
  auto first = it->GetNext();
  ASSERT_TRUE(first.ok() && first->has_value());
  ASSERT_TRUE(it->GetNext().ok());
  EXPECT_EQ(log_.made, 1);
  EXPECT_EQ(log_.nodes_when_made, 3u);  // Range, Map, WithOptions
  EXPECT_NE(it->tuner(), nullptr);
  it.reset();
  EXPECT_EQ(log_.destroyed, 1);
  EXPECT_TRUE(log_.nodes_alive_at_destruction);
}

TEST_F(IteratorTunerTest, NotMadeWhenOptionsDisableIt) {
  Options options;
  options.autotune = false;
  auto it = AutotunedMap(options).MakeIterator();
  ASSERT_TRUE(it->Initialize().ok());
  EXPECT_EQ(log_.made, 0);
  EXPECT_EQ(it->tuner(), nullptr);
}

TEST_F(IteratorTunerTest, NotMadeWithoutAutotuneKnobs) {
  auto it =
      Dataset::Range(10)
          .Map([](Element e) -> absl::StatusOr<Element> { return e; }, {.num_parallel_calls = 2})
          .MakeIterator();
  ASSERT_TRUE(it->Initialize().ok());
  EXPECT_EQ(log_.made, 0);
}

// An owner whose thread waits in GetNext (Python's fetching thread) stops that wait with Cancel,
// though the map calls the pipeline waits for never return by themselves.
// As tf.data with a seed: each iterator of a dataset is the next iteration, with its own shuffle
// order and random draws, reproducibly (the same dataset built again repeats the sequence), and a
// checkpoint restores the iteration it was taken in.
TEST(IteratorTest, EachIterationOfADatasetReshufflesReproducibly) {
  auto make = [] { return Dataset::Range(50).Shuffle(50).WithOptions({.seed = 4}); };
  const Dataset ds = make(), again = make();
  std::vector<std::vector<int64_t>> orders, repeated;
  for (int i = 0; i < 3; ++i) {
    auto a = testing::Collect(ds);
    auto b = testing::Collect(again);
    ASSERT_TRUE(a.ok() && b.ok());
    orders.push_back(testing::Ints(*a));
    repeated.push_back(testing::Ints(*b));
  }
  EXPECT_EQ(orders, repeated);
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
  // Without reshuffle_each_iteration, every iteration has the first one's order.
  const Dataset fixed =
      Dataset::Range(50).Shuffle(50, {.reshuffle_each_iteration = false}).WithOptions({.seed = 4});
  auto f0 = testing::Collect(fixed);
  auto f1 = testing::Collect(fixed);
  ASSERT_TRUE(f0.ok() && f1.ok());
  EXPECT_EQ(testing::Ints(*f0), testing::Ints(*f1));
  EXPECT_EQ(testing::Ints(*f0), orders[0]);
  // A checkpoint of the third iteration resumes it, not the iteration of the iterator restored.
  auto it = ds.MakeIterator();
  ASSERT_TRUE(testing::Drain(*it, 10).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto rest = testing::Drain(*fresh);
  ASSERT_TRUE(rest.ok());
  auto expected_rest = testing::Drain(*it);
  ASSERT_TRUE(expected_rest.ok());
  EXPECT_EQ(testing::Ints(*rest), testing::Ints(*expected_rest));
}

TEST(IteratorTest, CancelEndsAGetNextBlockedOnThePipeline) {
  auto release = std::make_shared<absl::Notification>();
  auto ds = Dataset::Range(1000)
                .Map(
                    [release](Element e) -> absl::StatusOr<Element> {
                      release->WaitForNotification();
                      return e;
                    },
                    {.num_parallel_calls = 2})
                .Shuffle(100, {.seed = 1});
  auto it = ds.MakeIterator();
  absl::StatusOr<std::optional<Element>> result;
  std::thread consumer([&] { result = it->GetNext(); });
  it->Cancel();
  consumer.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << result.status();
  EXPECT_EQ(it->GetNext().status().code(), absl::StatusCode::kCancelled);  // sticky
  release->Notify();  // the calls still running finish before the iterator joins them
}

// A Shuffle filling a large buffer on a Prefetch's thread pulls on at its next input once
// cancelled: the iterator's destructor, which joins that thread, does not wait for the fill (a
// Python Ctrl-C, which drops the iterator, waited for all of it).
TEST(IteratorTest, CancelStopsAShuffleFillingItsBuffer) {
  auto release = std::make_shared<absl::Notification>();
  auto pulled = std::make_shared<std::atomic<int64_t>>(0);
  auto reached = std::make_shared<absl::Notification>();
  constexpr int64_t kBuffer = 200000;
  auto ds = Dataset::Range(kBuffer)
                .Map([release, pulled, reached](Element e) -> absl::StatusOr<Element> {
                  if (pulled->fetch_add(1) + 1 == 1000) {
                    reached->Notify();
                    release->WaitForNotification();
                  }
                  return e;
                })
                .Shuffle(kBuffer, {.seed = 1})
                .Prefetch(1);
  auto it = ds.MakeIterator();
  std::thread consumer([&] { (void)it->GetNext(); });
  reached->WaitForNotification();  // the fill is under way, held at its 1000th input
  it->Cancel();
  release->Notify();
  consumer.join();
  it.reset();
  EXPECT_LT(pulled->load(), 1010);
}

TEST(IteratorTest, CpuBudgetCapsTheArena) {
  Options options;
  options.threads = 4;
  options.cpu_budget = 1;
  auto it = Dataset::Range(10).WithOptions(options).MakeIterator();
  EXPECT_EQ(it->context().runtime->num_threads(), 1);
  options.cpu_budget = 8;  // a budget above the threads leaves them
  auto wide = Dataset::Range(10).WithOptions(options).MakeIterator();
  EXPECT_EQ(wide->context().runtime->num_threads(), 4);
}

TEST(IteratorTest, AutotuneOptionMerges) {
  Options inner;
  inner.autotune = false;
  Options outer;
  EXPECT_FALSE(*inner.MergedWith(outer).autotune);
  outer.autotune = true;
  EXPECT_TRUE(*inner.MergedWith(outer).autotune);
}

// WithOptions on WithOptions is one node holding both, the outer's fields winning where set (as
// tf.data merges them): a benchmark or a trainer that adds its own options adds no node.
TEST(IteratorTest, WithOptionsOnWithOptionsIsOneNode) {
  const Dataset ds = Dataset::Range(10)
                         .Map([](Element e) { return e; })
                         .WithOptions({.seed = 3, .threads = 1})
                         .WithOptions({.threads = 2});
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  std::vector<std::string> names;
  for (const NodeStatsSnapshot& s : it->Stats()) names.push_back(s.name);
  EXPECT_THAT(names, ::testing::ElementsAre("Range[0]", "Map[1]", "WithOptions[2]"));
  EXPECT_EQ(it->context().runtime->num_threads(), 2);                 // the outer one's
  EXPECT_EQ(it->context().options.seed, std::optional<uint64_t>(3));  // the inner one's, kept
}

}  // namespace
}  // namespace sluice
