#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::InnerSeeds;
using ::sluice::testing::Ints;
using ::sluice::testing::Tens;
using ::sluice::testing::Value;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

// The results of `it` up to the end or the first error.
std::vector<int64_t> ReadUntilError(Iterator& it, absl::Status* error) {
  std::vector<int64_t> out;
  while (true) {
    auto e = it.GetNext();
    if (!e.ok()) {
      *error = e.status();
      return out;
    }
    if (!e->has_value()) return out;
    out.push_back(Value(**e));
  }
}

const NodeStatsSnapshot* Node(const std::vector<NodeStatsSnapshot>& stats,
                              const std::string& name) {
  for (const auto& s : stats) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// Parameter: num_parallel_calls.
class InterleaveTest : public ::testing::TestWithParam<int> {
 protected:
  InterleaveOptions Opts(int cycle_length, int block_length) const {
    return {.cycle_length = cycle_length,
            .block_length = block_length,
            .num_parallel_calls = GetParam()};
  }
};

// The expected orders follow tf.data's interleave loop, worked by hand:
// inputs 1..5 give [10], [20 21], [30 31 32], [40..43], [50..54].
TEST_P(InterleaveTest, TfDataOrderCycle2Block2) {
  auto out = Collect(Dataset::Range(1, 6).Interleave(Tens, Opts(2, 2)));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(10, 20, 21, 30, 31, 32, 40, 41, 50, 51, 42, 43, 52, 53, 54));
}

TEST_P(InterleaveTest, TfDataOrderCycle2Block3) {
  auto out = Collect(Dataset::Range(1, 6).Interleave(Tens, Opts(2, 3)));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(10, 20, 21, 30, 31, 32, 40, 41, 42, 43, 50, 51, 52, 53, 54));
}

TEST_P(InterleaveTest, TfDataOrderCycle3Block1) {
  auto out = Collect(Dataset::Range(1, 6).Interleave(Tens, Opts(3, 1)));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(10, 20, 30, 21, 31, 40, 32, 41, 50, 42, 51, 43, 52, 53, 54));
}

TEST_P(InterleaveTest, CycleLengthOneIsFlatMap) {
  auto out = Collect(Dataset::Range(1, 6).Interleave(Tens, Opts(1, 2)));
  ASSERT_TRUE(out.ok()) << out.status();
  auto flat = Collect(Dataset::Range(1, 6).FlatMap(Tens));
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(Ints(*out), Ints(*flat));
}

// The example from tf.data.Dataset.interleave's documentation.
TEST_P(InterleaveTest, TfDataDocumentationExample) {
  auto out = Collect(Dataset::Range(1, 6).Interleave(
      [](Element e) -> absl::StatusOr<Dataset> {
        return Dataset::Range(Value(e), Value(e) + 1).Repeat(6);
      },
      Opts(2, 4)));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3,
                                      3, 4, 4, 5, 5, 5, 5, 5, 5));
}

TEST_P(InterleaveTest, EmptyInputAndEmptyInnerDatasets) {
  auto empty = Collect(Dataset::Range(0).Interleave(Tens, Opts(2, 1)));
  ASSERT_TRUE(empty.ok());
  EXPECT_THAT(*empty, IsEmpty());
  auto all_empty = Collect(Dataset::Range(40).Interleave(
      [](Element) -> absl::StatusOr<Dataset> { return Dataset::Range(0); }, Opts(3, 2)));
  ASSERT_TRUE(all_empty.ok());
  EXPECT_THAT(*all_empty, IsEmpty());
  // Inputs 0..3: [], [10], [20 21], [30 31 32]; the empty one still takes a
  // turn of the cycle.
  auto some = Collect(Dataset::Range(0, 4).Interleave(Tens, Opts(2, 1)));
  ASSERT_TRUE(some.ok());
  EXPECT_THAT(Ints(*some), ElementsAre(10, 20, 21, 30, 31, 32));
}

TEST_P(InterleaveTest, EndOfSequenceAtEveryPositionRepeats) {
  for (int64_t n = 1; n < 7; ++n) {
    auto it = Dataset::Range(1, n).Interleave(Tens, Opts(2, 2)).MakeIterator();
    auto got = Drain(*it);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(static_cast<int64_t>(got->size()), n * (n - 1) / 2);
    for (int i = 0; i < 3; ++i) {
      auto e = it->GetNext();
      ASSERT_TRUE(e.ok());
      EXPECT_FALSE(e->has_value());
    }
  }
}

TEST_P(InterleaveTest, FunctionErrorIsNamedPassesThroughAndCanBeSkipped) {
  // `throws`: the function throws instead of returning its error, which a parallel Interleave's
  // worker thread turned into the end of the process; it is the same error in its place.
  auto make = [this](bool throws) {
    return Dataset::Range(1, 6).Interleave(
        [throws](Element e) -> absl::StatusOr<Dataset> {
          if (Value(e) == 3 && throws) throw std::runtime_error("no dataset for 3");
          if (Value(e) == 3) return absl::NotFoundError("no dataset for 3");
          return Tens(std::move(e));
        },
        Opts(2, 2));
  };
  absl::Status error;
  EXPECT_THAT(ReadUntilError(*make(true).MakeIterator(), &error), ElementsAre(10, 20, 21));
  EXPECT_EQ(error.code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(error.message(),
            "Interleave[1] at element 2: a function threw a C++ exception: no dataset for 3 "
            "(pipeline functions return errors as absl::Status)");
  const Dataset ds = make(false);
  auto it = ds.MakeIterator();
  EXPECT_THAT(ReadUntilError(*it, &error), ElementsAre(10, 20, 21));
  EXPECT_EQ(error.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(error.message(), "Interleave[1] at element 2: no dataset for 3");
  // The failed input element leaves its slot empty; the next one takes it.
  auto skipping = ds.IgnoreErrors().MakeIterator();
  auto rest = Drain(*skipping);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_THAT(Ints(*rest), ElementsAre(10, 20, 21, 40, 41, 42, 43, 50, 51, 52, 53, 54));
  EXPECT_EQ(Node(skipping->Stats(), "IgnoreErrors[2]")->skipped, 1);
}

TEST_P(InterleaveTest, InnerErrorIsNamedByTheInnerNodeAndCanBeSkipped) {
  auto ds = Dataset::Range(1, 6).Interleave(
      [](Element e) -> absl::StatusOr<Dataset> {
        SLUICE_ASSIGN_OR_RETURN(Dataset inner, Tens(std::move(e)));
        return inner.Map([](Element v) -> absl::StatusOr<Element> {
          if (Value(v) == 31) return absl::DataLossError("bad 31");
          return v;
        });
      },
      Opts(2, 2));
  auto it = ds.MakeIterator();
  absl::Status error;
  EXPECT_THAT(ReadUntilError(*it, &error), ElementsAre(10, 20, 21, 30));
  EXPECT_EQ(error.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(error.message(), "Interleave[1]/Map[1] at element 1: bad 31");
  // An error does not count towards the block: 32 completes 3's block.
  auto skipped = Collect(ds.IgnoreErrors());
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  EXPECT_THAT(Ints(*skipped), ElementsAre(10, 20, 21, 30, 32, 40, 41, 50, 51, 42, 43, 52, 53, 54));
}

TEST_P(InterleaveTest, InputErrorPassesThrough) {
  auto ds = Dataset::Range(1, 6)
                .Map([](Element e) -> absl::StatusOr<Element> {
                  if (Value(e) == 2) return absl::DataLossError("bad input 2");
                  return e;
                })
                .Interleave(Tens, Opts(2, 2));
  auto it = ds.MakeIterator();
  absl::Status error;
  EXPECT_THAT(ReadUntilError(*it, &error), ElementsAre(10));
  EXPECT_EQ(error.message(), "Map[1] at element 1: bad input 2");
  // Sequentially: [10] ends, slot 1 takes 3 after the error, and so on.
  auto skipped = Collect(ds.IgnoreErrors());
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  EXPECT_THAT(Ints(*skipped), ElementsAre(10, 30, 31, 40, 41, 32, 42, 43, 50, 51, 52, 53, 54));
}

TEST_P(InterleaveTest, EachInnerPipelineHasItsOwnSeedsWhateverTheParallelism) {
  auto make = [&](uint64_t seed, int parallel) {
    return Dataset::Range(6)
        .Interleave(InnerSeeds, {.cycle_length = 3, .num_parallel_calls = parallel})
        .WithOptions({.seed = seed});
  };
  auto a = Collect(make(42, GetParam()));
  auto sequential = Collect(make(42, 1));
  auto other = Collect(make(43, GetParam()));
  ASSERT_TRUE(a.ok() && sequential.ok() && other.ok());
  const std::vector<int64_t> seeds = Ints(*a);
  EXPECT_EQ(std::set<int64_t>(seeds.begin(), seeds.end()).size(), 18u);
  EXPECT_EQ(seeds, Ints(*sequential));
  EXPECT_NE(Ints(*other), seeds);
}

TEST_P(InterleaveTest, CheckpointResumesExactly) {
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(1, 6).Interleave(Tens, Opts(2, 2)),
                                          {0, 1, 2, 3, 4, 7, 10, 14, 15});
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(1, 6).Interleave(Tens, Opts(2, 3)),
                                          {0, 1, 5, 6, 9, 13, 15});
  // Restored inner pipelines get their salts back.
  testing::ExpectCheckpointsResumeExactly(
      Dataset::Range(6).Interleave(InnerSeeds, Opts(4, 2)).WithOptions({.seed = 3}),
      {0, 1, 5, 9, 17, 18});
}

TEST_P(InterleaveTest, CheckpointKeepsBufferedErrors) {
  auto ds = Dataset::Range(1, 6)
                .Interleave(
                    [](Element e) -> absl::StatusOr<Dataset> {
                      if (Value(e) == 4) return absl::NotFoundError("no 4");
                      SLUICE_ASSIGN_OR_RETURN(Dataset inner, Tens(std::move(e)));
                      return inner.Map([](Element v) -> absl::StatusOr<Element> {
                        if (Value(v) == 31) return absl::DataLossError("bad 31");
                        return v;
                      });
                    },
                    Opts(2, 2))
                .IgnoreErrors();
  testing::ExpectCheckpointsResumeExactly(ds, {0, 3, 4, 5, 6, 9, 10});
}

TEST_P(InterleaveTest, StatsAndTunables) {
  auto ds = Dataset::Range(1, 6).Interleave(Tens, Opts(2, 2));
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it).ok());
  auto stats = it->Stats();
  const NodeStatsSnapshot* node = Node(stats, "Interleave[1]");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->kind, NodeKind::kInterleave);
  EXPECT_EQ(node->elements_produced, 15);
  EXPECT_EQ(node->bytes_produced, 15 * 8);
  EXPECT_EQ(node->cycle_length, 2);
  EXPECT_EQ(node->parallelism, GetParam() == 1 ? -1 : (GetParam() == kAutotune ? 2 : GetParam()));
  EXPECT_EQ(node->buffered_elements, 0);
  EXPECT_GT(node->busy_ns, 0);
}

// Found by iterator_restore_fuzzer (a timeout): a checkpoint whose open slot had neither an
// iterator nor its end buffered. Restored, the parallel loop waited for a worker that could never
// read that slot (a hang with idle threads), and the sequential loop called a null iterator. Each
// such checkpoint, and a miscounted cycle, is DataLoss now.
TEST_P(InterleaveTest, RestoreRefusesSlotsAndCountsTheLoopCannotServe) {
  // Inner pipelines of 100 x elements, longer than a parallel slot buffers (64 small elements), so
  // that both slots still have their iterators when saved.
  auto ds = Dataset::Range(1, 6).Interleave(
      [](Element e) -> absl::StatusOr<Dataset> {
        const int64_t x = Value(e);
        return Dataset::Range(x * 1000, x * 1000 + 100 * x);
      },
      Opts(2, 2));
  auto it = ds.MakeIterator();
  // 1000, 1001, 2000, 2001: back at slot 0.
  ASSERT_TRUE(Drain(*it, 4).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  proto::IteratorCheckpoint genuine;
  ASSERT_TRUE(genuine.ParseFromString(*saved));
  const proto::IteratorStateProto& root = genuine.root();
  ASSERT_EQ(root.ints().at("num_open"), 2);
  ASSERT_TRUE(root.input_present(1));  // slot 0, with its iterator
  ASSERT_TRUE(root.inputs(1).input_present(0));
  {  // As saved, it restores and reads on.
    auto fresh = ds.MakeIterator();
    ASSERT_TRUE(fresh->Restore(*saved).ok());
    auto rest = Drain(*fresh);
    ASSERT_TRUE(rest.ok()) << rest.status();
    EXPECT_EQ(rest->size(), 1500u - 4u);
  }
  const std::vector<std::pair<std::string, std::function<void(proto::IteratorStateProto*)>>>
      damages = {
          {"a slot without its iterator",
           [](proto::IteratorStateProto* r) { r->mutable_inputs(1)->set_input_present(0, false); }},
          {"a slot said to have ended, with its iterator",
           [](proto::IteratorStateProto* r) {
             (*r->mutable_inputs(1)->mutable_ints())["ended"] = 1;
           }},
          {"a failed slot",
           [](proto::IteratorStateProto* r) {
             (*r->mutable_inputs(1)->mutable_ints())["failed"] = 1;
           }},
          {"one more open slot than present",
           [](proto::IteratorStateProto* r) { (*r->mutable_ints())["num_open"] = 3; }},
          {"the end of input before the input ended",
           [](proto::IteratorStateProto* r) {
             (*r->mutable_ints())["end_of_input"] = 1;
             (*r->mutable_ints())["input_ended"] = 0;
           }},
          {"a block index past the block",
           [](proto::IteratorStateProto* r) { (*r->mutable_ints())["block_index"] = 2; }},
      };
  for (const auto& [what, damage] : damages) {
    SCOPED_TRACE(what);
    proto::IteratorCheckpoint bad = genuine;
    damage(bad.mutable_root());
    auto fresh = ds.MakeIterator();
    const absl::Status s = fresh->Restore(bad.SerializeAsString());
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("Interleave"));
  }
}

INSTANTIATE_TEST_SUITE_P(Parallelism, InterleaveTest, ::testing::Values(1, 2, 8, kAutotune));

// Inner pipelines of uneven lengths whose elements take uneven times.
Dataset Uneven(int parallel, std::optional<bool> deterministic = std::nullopt) {
  return Dataset::Range(24).Interleave(
      [](Element e) -> absl::StatusOr<Dataset> {
        const int64_t x = Value(e);
        return Dataset::Range(x * 100, x * 100 + (x * 7) % 11)
            .Map([](Element v) -> absl::StatusOr<Element> {
              std::this_thread::sleep_for(std::chrono::microseconds((Value(v) * 37) % 400));
              return v;
            });
      },
      {.cycle_length = 4,
       .block_length = 3,
       .num_parallel_calls = parallel,
       .deterministic = deterministic});
}

TEST(InterleaveParallelTest, DeterministicOrderIsTheSequentialOrder) {
  auto sequential = Collect(Uneven(1));
  ASSERT_TRUE(sequential.ok());
  ASSERT_EQ(sequential->size(), 117u);
  for (int parallel : {2, 8, kAutotune}) {
    auto out = Collect(Uneven(parallel));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Ints(*out), Ints(*sequential)) << parallel;
  }
}

TEST(InterleaveParallelTest, NonDeterministicYieldsTheSameMultiset) {
  auto sequential = Collect(Uneven(1));
  ASSERT_TRUE(sequential.ok());
  std::vector<int64_t> want = Ints(*sequential);
  std::sort(want.begin(), want.end());
  for (int parallel : {2, 8}) {
    auto out = Collect(Uneven(parallel, false));
    ASSERT_TRUE(out.ok());
    std::vector<int64_t> got = Ints(*out);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want) << parallel;
  }
  // The pipeline-wide option applies when the op sets none.
  auto piped = Collect(Uneven(4).WithOptions({.deterministic = false}));
  ASSERT_TRUE(piped.ok());
  std::vector<int64_t> got = Ints(*piped);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
}

TEST(InterleaveParallelTest, NonDeterministicTakesWhatIsReady) {
  // Input 0's pipeline is slow; the others' elements come out first.
  auto ds = Dataset::Range(4).Interleave(
      [](Element e) -> absl::StatusOr<Dataset> {
        const int64_t x = Value(e);
        return Dataset::Range(x * 10, x * 10 + 2).Map([x](Element v) -> absl::StatusOr<Element> {
          if (x == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
          return v;
        });
      },
      {.cycle_length = 4, .num_parallel_calls = 4, .deterministic = false});
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok());
  std::vector<int64_t> got = Ints(*out);
  ASSERT_EQ(got.size(), 8u);
  EXPECT_NE(got[0], 0);
  EXPECT_THAT(std::vector<int64_t>(got.end() - 2, got.end()), ElementsAre(0, 1));
}

TEST(InterleaveParallelTest, CheckpointMidCycleWithWorkersReadingAhead) {
  for (int parallel : {2, 8}) {
    testing::ExpectCheckpointsResumeExactly(Uneven(parallel), {0, 1, 3, 4, 17, 50, 116, 117});
  }
}

TEST(InterleaveParallelTest, CheckpointHoldsBufferedElementsAndFutures) {
  // Save after the workers have filled the buffers: the checkpoint must carry
  // the buffered elements and the inner pipelines opened ahead.
  auto ds = Dataset::Range(1, 9).Interleave(
      Tens, {.cycle_length = 2, .block_length = 2, .num_parallel_calls = 4});
  auto it = ds.MakeIterator();
  auto first = Drain(*it, 3);
  ASSERT_TRUE(first.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto stats = it->Stats();
  const NodeStatsSnapshot* node = Node(stats, "Interleave[1]");
  ASSERT_NE(node, nullptr);
  EXPECT_GT(node->buffered_elements, 0);
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  proto::IteratorCheckpoint ckpt;
  ASSERT_TRUE(ckpt.ParseFromString(*saved));
  EXPECT_GT(ckpt.root().ints().at("num_futures"), 0);
  auto rest = Drain(*it);
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto resumed = Drain(*fresh);
  ASSERT_TRUE(rest.ok() && resumed.ok());
  EXPECT_EQ(Ints(*resumed), Ints(*rest));
  auto sequential =
      Collect(Dataset::Range(1, 9).Interleave(Tens, {.cycle_length = 2, .block_length = 2}));
  ASSERT_TRUE(sequential.ok());
  std::vector<int64_t> joined = Ints(*first);
  for (int64_t v : Ints(*resumed)) joined.push_back(v);
  EXPECT_EQ(joined, Ints(*sequential));
}

// What the workers buffer once they have filled every slot they may, after `taken` elements (waits
// for the figure to reach `at_least`, then lets the workers run on a while and reads it again).
int64_t BufferedWhenFull(const Dataset& ds, int64_t at_least, int64_t taken = 1) {
  auto it = ds.MakeIterator();
  EXPECT_TRUE(Drain(*it, taken).ok());
  const auto buffered = [&] {
    const auto stats = it->Stats();
    const NodeStatsSnapshot* node = Node(stats, "Interleave[1]");
    return node == nullptr ? -1 : node->buffered_elements;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (buffered() < at_least && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return buffered();
}

// Small elements (records of a few KB and less) are read ahead 64 a slot, so that a worker wakes
// once per half buffer instead of once per element; large ones two a slot (block_length 1), as
// before, so that decoded images stay bounded.
TEST(InterleaveParallelTest, SlotsBufferSmallElementsDeeplyAndLargeOnesTwoAtATime) {
  const InterleaveOptions options{.cycle_length = 4, .num_parallel_calls = 2};
  const Dataset small = Dataset::Range(4).Interleave(
      [](Element) -> absl::StatusOr<Dataset> { return Dataset::Range(1000); }, options);
  // 4 slots of 64, less the element taken (which the workers may or may not have replaced).
  const int64_t deep = BufferedWhenFull(small, 4 * 64 - 1);
  EXPECT_GE(deep, 4 * 64 - 1);
  EXPECT_LE(deep, 4 * 64);
  const Dataset large = Dataset::Range(4).Interleave(
      [](Element) -> absl::StatusOr<Dataset> {
        return Dataset::Range(1000).Map([](Element) -> absl::StatusOr<Element> {
          return Element{Tensor(DType::kFloat32, Shape{64 << 10})};  // 256 KB
        });
      },
      options);
  const int64_t shallow = BufferedWhenFull(large, 4 * 2 - 1);
  EXPECT_GE(shallow, 4 * 2 - 1);
  EXPECT_LE(shallow, 4 * 2);
}

// The depth follows the elements' recent size: after 5,000 small elements, the large ones that
// follow are buffered two at a time at once (an average over every element so far would have
// kept the slot 64 deep for hundreds of them: 16 MB).
TEST(InterleaveParallelTest, ASlotsDepthFollowsAChangeOfElementSize) {
  const Dataset ds = Dataset::Range(2).Interleave(
      [](Element e) -> absl::StatusOr<Dataset> {
        if (Value(e) == 0) return Dataset::Range(5000);
        return Dataset::Range(1000).Map([](Element) -> absl::StatusOr<Element> {
          return Element{Tensor(DType::kFloat32, Shape{64 << 10})};  // 256 KB
        });
      },
      {.cycle_length = 1, .num_parallel_calls = 2});
  const int64_t buffered = BufferedWhenFull(ds, /*at_least=*/1, /*taken=*/5010);
  EXPECT_GE(buffered, 1);
  EXPECT_LE(buffered, 2);
}

TEST(InterleaveParallelTest, UnderRepeatAcrossEpochs) {
  auto ds = Dataset::Range(1, 5)
                .Interleave(InnerSeeds, {.cycle_length = 2, .num_parallel_calls = 3})
                .Repeat(2)
                .WithOptions({.seed = 5});
  auto sequential = Collect(Dataset::Range(1, 5)
                                .Interleave(InnerSeeds, {.cycle_length = 2})
                                .Repeat(2)
                                .WithOptions({.seed = 5}));
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok() && sequential.ok());
  EXPECT_EQ(Ints(*out), Ints(*sequential));
  const std::vector<int64_t> seeds = Ints(*out);
  ASSERT_EQ(seeds.size(), 24u);
  EXPECT_NE(std::vector<int64_t>(seeds.begin(), seeds.begin() + 12),
            std::vector<int64_t>(seeds.begin() + 12, seeds.end()));
  testing::ExpectCheckpointsResumeExactly(ds, {0, 5, 12, 13, 20, 24});
}

// Destroying must not wait for inner pipelines to drain: only for the calls
// in progress, which here take 30 ms.
TEST(InterleaveParallelTest, DestroyingMidStreamWithSlowInnerPipelinesIsFast) {
  auto ds = Dataset::Range(100).Interleave(
      [](Element e) -> absl::StatusOr<Dataset> {
        return Dataset::Range(1000).Map([](Element v) -> absl::StatusOr<Element> {
          std::this_thread::sleep_for(std::chrono::milliseconds(30));
          return v;
        });
      },
      {.cycle_length = 4, .num_parallel_calls = 4});
  auto it = ds.MakeIterator();
  auto first = Drain(*it, 2);
  ASSERT_TRUE(first.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(10));  // Workers are mid-call.
  const auto t0 = std::chrono::steady_clock::now();
  it.reset();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_LT(ms, testing::kCancelBudgetMs);
}

// An inner parallel Map blocks its caller while its calls (300 ms) run; the inner pipelines'
// cancellation wakes it, and each inner Map waits for its calls under way (they run at once, so
// about one call's time in all) and starts none of the queued ones.
TEST(InterleaveParallelTest, DestroyingWakesBlockedInnerPipelines) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = Dataset::Range(100).Interleave(
      [calls](Element e) -> absl::StatusOr<Dataset> {
        return Dataset::Range(1000).Map(
            [calls](Element v) -> absl::StatusOr<Element> {
              ++*calls;
              std::this_thread::sleep_for(std::chrono::milliseconds(300));
              return v;
            },
            {.num_parallel_calls = 2});
      },
      {.cycle_length = 3, .num_parallel_calls = 3});
  auto it = ds.MakeIterator();
  auto first = Drain(*it, 1);
  ASSERT_TRUE(first.ok());
  const auto t0 = std::chrono::steady_clock::now();
  it.reset();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_LT(ms, 300 + testing::kCancelBudgetMs);
  const int at_destruction = calls->load();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(calls->load(), at_destruction);
}

TEST(InterleaveTest, ByNameForFileNames) {
  auto names = Dataset::Range(1, 4).Map([](Element e) -> absl::StatusOr<Element> {
    return Element{Tensor::Scalar<std::string>(std::string(Value(e), 'f'))};
  });
  auto ds = names.Interleave(
      [](const std::string& name) {
        return Dataset::Range(10 * name.size(), 10 * name.size() + 2);
      },
      {.cycle_length = 3, .block_length = 1});
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(10, 20, 30, 11, 21, 31));
  auto wrong = Collect(Dataset::Range(3).Interleave(
      [](const std::string&) { return Dataset::Range(1); }, {.cycle_length = 1}));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong.status().message()),
              ::testing::StartsWith("Interleave[1] at element 0: Interleave by name expects a "
                                    "scalar bytes element (a file name), got "));
}

TEST(InterleaveTest, InvalidOptionsAreClearErrors) {
  auto cycle = Collect(Dataset::Range(3).Interleave(Tens, {.cycle_length = 0}));
  ASSERT_FALSE(cycle.ok());
  EXPECT_EQ(cycle.status().message(),
            "Interleave[1]: cycle_length must be >= 1 or AUTOTUNE (-1), got 0");
  auto block = Collect(Dataset::Range(3).Interleave(Tens, {.cycle_length = 2, .block_length = 0}));
  ASSERT_FALSE(block.ok());
  EXPECT_EQ(block.status().message(), "Interleave[1]: block_length must be >= 1, got 0");
  auto parallel =
      Collect(Dataset::Range(3).Interleave(Tens, {.cycle_length = 2, .num_parallel_calls = -3}));
  ASSERT_FALSE(parallel.ok());
  EXPECT_EQ(parallel.status().message(),
            "Interleave[1]: num_parallel_calls must be >= 1 or AUTOTUNE (-1), got -3");
}

TEST(InterleaveTest, AutotuneCycleLengthIsTheRuntimesThreadCount) {
  auto ds = Dataset::Range(1, 6)
                .Interleave(Tens, {.cycle_length = kAutotune, .num_parallel_calls = kAutotune})
                .WithOptions({.threads = 3});
  auto it = ds.MakeIterator();
  auto out = Drain(*it);
  ASSERT_TRUE(out.ok());
  // Inputs 1..5 in a cycle of 3, one element at a time.
  EXPECT_THAT(Ints(*out), ElementsAre(10, 20, 30, 21, 31, 40, 32, 41, 50, 42, 51, 43, 52, 53, 54));
  const auto stats = it->Stats();
  const NodeStatsSnapshot* node = Node(stats, "Interleave[1]");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->cycle_length, 3);
  EXPECT_EQ(node->parallelism, 3);
}

// A deterministic Interleave's order follows its cycle length, so AUTOTUNE must not move it (two
// runs would differ from the epoch after a change on): kAutotune fixes it at the thread count,
// as tf.data does. Only deterministic=false leaves it to AUTOTUNE.
TEST(InterleaveTest, AutotuneTunesTheCycleLengthOnlyWhereTheOrderMayChange) {
  for (const bool deterministic : {true, false}) {
    auto ds = Dataset::Range(1, 6)
                  .Interleave(Tens, {.cycle_length = kAutotune,
                                     .num_parallel_calls = kAutotune,
                                     .deterministic = deterministic})
                  .WithOptions({.threads = 3});
    auto it = ds.MakeIterator();
    ASSERT_TRUE(Drain(*it).ok());
    const NodeStats* node = nullptr;
    for (const auto& n : it->stats_registry()->Nodes()) {
      if (n->name == "Interleave[1]") node = n.get();
    }
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(node->cycle_length.value.load(), 3) << deterministic;
    EXPECT_EQ(node->cycle_length.autotune.load(), !deterministic);
    EXPECT_TRUE(node->parallelism.autotune.load());  // parallelism stays AUTOTUNE's either way
  }
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

std::string Bytes(const Element& e) { return e[0].flat<std::string>()[0]; }

// The DESIGN's use: file names from ListFiles, one TFRecord reader each.
Dataset InterleavedFiles(std::vector<std::string> patterns, int parallel) {
  return Dataset::ListFiles(std::move(patterns), {.shuffle = false})
      .Interleave([](const std::string& file) { return Dataset::TFRecord(file); },
                  {.cycle_length = 3, .block_length = 1, .num_parallel_calls = parallel});
}

TEST(InterleaveFilesTest, InterleavesTFRecordFilesByName) {
  const std::string dir = SLUICE_TEST_DATA;
  auto plain = Collect(Dataset::TFRecord(dir + "/small100.tfrecord"));
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_EQ(plain->size(), 100u);
  for (int parallel : {1, 3, kAutotune}) {
    // small100.tfrecord, .gz and .zlib: the same records, compressed or not.
    auto out = Collect(InterleavedFiles({dir + "/small100.tfrecord*"}, parallel));
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 300u);
    for (size_t i = 0; i < 100; ++i) {
      const std::string want = Bytes((*plain)[i]);
      ASSERT_NE(want.find("item-" + std::to_string(i)), std::string::npos);
      for (size_t f = 0; f < 3; ++f) ASSERT_EQ(Bytes((*out)[3 * i + f]), want) << i << " " << f;
    }
  }
}

TEST(InterleaveFilesTest, CheckpointRestoresTheReadersOfOpenFiles) {
  const std::string dir = SLUICE_TEST_DATA;
  for (int parallel : {1, 3}) {
    testing::ExpectCheckpointsResumeExactly(
        InterleavedFiles({dir + "/small100.tfrecord*"}, parallel), {0, 1, 2, 151, 299, 300});
  }
}

TEST(InterleaveFilesTest, ACorruptRecordsErrorPassesThrough) {
  const std::string dir = SLUICE_TEST_DATA;
  for (int parallel : {1, 2}) {
    auto it =
        InterleavedFiles({dir + "/small100.tfrecord", dir + "/small100.corrupt-record41.tfrecord"},
                         parallel)
            .MakeIterator();
    std::vector<std::string> before;
    absl::Status error;
    while (true) {
      auto e = it->GetNext();
      if (!e.ok()) {
        error = e.status();
        break;
      }
      ASSERT_TRUE(e->has_value()) << "no error before the end";
      before.push_back(Bytes(**e));
    }
    // ListFiles sorts: the corrupt file is first, so its record 41 is the
    // 83rd result.
    EXPECT_EQ(before.size(), 82u);
    EXPECT_THAT(std::string(error.message()), ::testing::HasSubstr("TFRecord"));
    EXPECT_THAT(std::string(error.message()), ::testing::HasSubstr("corrupt-record41"));
  }
}

// A Save of a parallel Interleave that waits on an inner Prefetch whose producer is stuck in a
// map function ends when the pipeline is cancelled: the Interleave saves its inner pipelines
// without holding its lock, so the cancellation (which takes that lock first) reaches them. With
// the lock held the Save waited until the function gave up (here after 30 s) and returned OK.
TEST(InterleaveCancellationTest, CancellingEndsASaveWaitingOnAStuckInnerPipeline) {
  absl::Notification release;  // the stuck calls' way out, once the Save has returned
  std::atomic<int> stuck{0};
  const Dataset ds = Dataset::Range(2).Interleave(
      [&](const Element&) -> absl::StatusOr<Dataset> {
        auto calls = std::make_shared<std::atomic<int>>(0);
        // Calls 1-3 fill the Interleave's slot (2) and the Prefetch's buffer (1); the 4th is
        // the producer's pull ahead, which blocks (in the first inner pipeline at least).
        return Dataset::Range(100)
            .Map([&, calls](Element e) {
              if (++*calls == 4) {
                ++stuck;
                release.WaitForNotificationWithTimeout(absl::Seconds(30));
              }
              return e;
            })
            .Prefetch(1);
      },
      {.cycle_length = 2, .block_length = 1, .num_parallel_calls = 2});
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  for (int i = 0; i < 1000 && stuck.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(stuck.load(), 0) << "no producer reached its blocking call";
  // The Interleave's workers finish their read-ahead: every slot full, none busy.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  absl::StatusOr<std::string> saved;
  std::thread saver([&] {
    saved = it->Save();
    release.Notify();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  it->context().cancellation->Cancel();
  saver.join();
  EXPECT_EQ(saved.status().code(), absl::StatusCode::kCancelled) << saved.status();
}

// A parallel Interleave's restore recomputes its slots' saved elements through their inner
// pipelines (a map function's time); a cancellation meanwhile returns at once instead of
// waiting for it: the Interleave restores without the lock its cancellation callback takes,
// as it saves. Before, the callback waited for the whole restore.
TEST(InterleaveCancellationTest, CancellingDuringARestoreDoesNotWaitForIt) {
  testing::BlockingMapGate gate;
  const Dataset ds = Dataset::Range(2).Interleave(
      [&](const Element&) -> absl::StatusOr<Dataset> { return Dataset::Range(100).Map(gate.Fn()); },
      {.cycle_length = 2, .block_length = 1, .num_parallel_calls = 2});
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  // The workers fill the slots' buffers.
  auto buffered = [&] {
    for (const NodeStatsSnapshot& node : it->Stats()) {
      if (node.name.rfind("Interleave", 0) == 0) return node.buffered_elements;
    }
    return int64_t{0};
  };
  for (int i = 0; i < 1000 && buffered() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(buffered(), 2);
  absl::StatusOr<std::string> saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_TRUE(testing::CancellationReturnsDuringRestore(ds, *saved, gate));
}

}  // namespace
}  // namespace sluice
