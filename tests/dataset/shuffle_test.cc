#include <algorithm>
#include <array>
#include <memory>
#include <set>
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
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int64_t> ShuffledInts(const Dataset& ds) {
  auto out = Collect(ds);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? Ints(*out) : std::vector<int64_t>{};
}

TEST(ShuffleTest, OutputIsAPermutationOfTheInput) {
  for (int64_t buffer : {2, 7, 50, 100, 1000}) {
    auto v = ShuffledInts(Dataset::Range(100).Shuffle(buffer, {.seed = 1}));
    EXPECT_EQ(Sorted(v), Iota(0, 100)) << "buffer " << buffer;
    EXPECT_NE(v, Iota(0, 100)) << "buffer " << buffer;  // Actually shuffled.
  }
}

TEST(ShuffleTest, SameSeedSameOrderDifferentSeedDifferentOrder) {
  auto a = ShuffledInts(Dataset::Range(100).Shuffle(20, {.seed = 7}));
  auto b = ShuffledInts(Dataset::Range(100).Shuffle(20, {.seed = 7}));
  auto c = ShuffledInts(Dataset::Range(100).Shuffle(20, {.seed = 8}));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(Sorted(c), Iota(0, 100));
}

TEST(ShuffleTest, PipelineSeedIsUsedWhenTheOpHasNone) {
  auto make = [](uint64_t seed) {
    return Dataset::Range(100).Shuffle(100).WithOptions({.seed = seed});
  };
  auto a = ShuffledInts(make(3));
  EXPECT_EQ(ShuffledInts(make(3)), a);
  EXPECT_NE(ShuffledInts(make(4)), a);
  // No seed anywhere: a fresh random seed per iterator.
  auto r1 = ShuffledInts(Dataset::Range(100).Shuffle(100));
  auto r2 = ShuffledInts(Dataset::Range(100).Shuffle(100));
  EXPECT_NE(r1, r2);
  // The op's own seed wins over the pipeline's.
  EXPECT_EQ(ShuffledInts(Dataset::Range(100).Shuffle(100, {.seed = 9}).WithOptions({.seed = 3})),
            ShuffledInts(Dataset::Range(100).Shuffle(100, {.seed = 9}).WithOptions({.seed = 4})));
}

TEST(ShuffleTest, BufferSizeOneIsTheIdentity) {
  EXPECT_EQ(ShuffledInts(Dataset::Range(50).Shuffle(1, {.seed = 5})), Iota(0, 50));
}

TEST(ShuffleTest, OutputComesFromTheWindowOfTheNextBufferSizeInputs) {
  // With a buffer of b, output i is one of inputs [0, i + b): a bounded shuffle, not a full one.
  const int64_t b = 10;
  auto v = ShuffledInts(Dataset::Range(200).Shuffle(b, {.seed = 11}));
  ASSERT_EQ(v.size(), 200u);
  int64_t max_displacement_back = 0;
  for (int64_t i = 0; i < 200; ++i) {
    EXPECT_LT(v[i], i + b) << "output " << i;
    max_displacement_back = std::max(max_displacement_back, i - v[i]);
  }
  EXPECT_GT(max_displacement_back, b);  // Elements can linger in the buffer.
}

TEST(ShuffleTest, FullBufferGivesAUniformShuffle) {
  // Over 2000 seeds, each position of Range(4) sees each value ~500 times (sd ~19): the bounds are
  // more than 5 sd away, and the seeds are fixed, so the test is deterministic.
  for (int64_t buffer : {4, 100}) {
    std::array<std::array<int, 4>, 4> counts{};
    for (uint64_t seed = 0; seed < 2000; ++seed) {
      auto v = ShuffledInts(Dataset::Range(4).Shuffle(buffer, {.seed = seed}));
      ASSERT_EQ(v.size(), 4u);
      for (int pos = 0; pos < 4; ++pos) ++counts[pos][v[pos]];
    }
    for (int pos = 0; pos < 4; ++pos) {
      for (int value = 0; value < 4; ++value) {
        EXPECT_GE(counts[pos][value], 400)
            << "buffer " << buffer << " position " << pos << " value " << value;
        EXPECT_LE(counts[pos][value], 600)
            << "buffer " << buffer << " position " << pos << " value " << value;
      }
    }
  }
}

TEST(ShuffleTest, PartialBufferFollowsTfDataAlgorithm) {
  // Range(3).Shuffle(2): the first output is 0 or 1 (half each), never 2; then 2 joins the one
  // left and either comes out next (half each). So value 2 is first 0%, second 50%, third 50%.
  std::array<std::array<int, 3>, 3> counts{};
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    auto v = ShuffledInts(Dataset::Range(3).Shuffle(2, {.seed = seed}));
    ASSERT_EQ(v.size(), 3u);
    for (int pos = 0; pos < 3; ++pos) ++counts[pos][v[pos]];
  }
  EXPECT_EQ(counts[0][2], 0);
  EXPECT_NEAR(counts[0][0], 1000, 100);
  EXPECT_NEAR(counts[1][2], 1000, 100);
  EXPECT_NEAR(counts[2][2], 1000, 100);
  // Value 0 is first half the time; otherwise it stays with 2 and is second or third equally.
  EXPECT_NEAR(counts[1][0], 500, 100);
  EXPECT_NEAR(counts[2][0], 500, 100);
}

TEST(ShuffleTest, EmptyInput) {
  auto out = Collect(Dataset::Range(0).Shuffle(10, {.seed = 1}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->empty());
}

TEST(ShuffleTest, EndOfSequenceRepeats) {
  for (int64_t n : {0, 1, 5, 12}) {
    auto it = Dataset::Range(n).Shuffle(4, {.seed = 2}).MakeIterator();
    auto got = Drain(*it);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(static_cast<int64_t>(got->size()), n);
    for (int i = 0; i < 3; ++i) {
      auto e = it->GetNext();
      ASSERT_TRUE(e.ok());
      EXPECT_FALSE(e->has_value());
    }
  }
}

TEST(ShuffleTest, NonPositiveBufferSizeIsAClearError) {
  for (int64_t b : {0, -1}) {
    auto out = Collect(Dataset::Range(10).Shuffle(b));
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(out.status().message(), absl::StrCat("Shuffle[1]: buffer_size must be > 0, got ", b));
  }
}

TEST(ShuffleTest, InputErrorsPassThroughNamed) {
  auto ds = Dataset::Range(20)
                .Map([](Element e) -> absl::StatusOr<Element> {
                  if (e[0].scalar<int64_t>() == 3) return absl::InvalidArgumentError("bad");
                  return e;
                })
                .Shuffle(8, {.seed = 1});
  auto out = Collect(ds);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), "Map[1] at element 3: bad");
}

TEST(ShuffleTest, CardinalityAndDescription) {
  EXPECT_EQ(Dataset::Range(17).Shuffle(4).Cardinality(), 17);
  EXPECT_EQ(
      Dataset::Range(17).Shuffle(4, {.seed = 3, .reshuffle_each_iteration = false}).DebugString(),
      "Range(0, 17, 1) -> Shuffle(4, seed=3, reshuffle_each_iteration=false)");
}

TEST(ShuffleTest, StatsReportTheBuffer) {
  auto it =
      Dataset::Range(100).Map([](Element e) { return e; }).Shuffle(10, {.seed = 1}).MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  auto stats = it->Stats();
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_EQ(stats[2].name, "Shuffle[2]");
  EXPECT_EQ(stats[2].buffered_elements, 9);
  EXPECT_EQ(stats[2].buffered_bytes, 9 * 8);
  EXPECT_EQ(stats[2].buffer_size, 10);
  EXPECT_EQ(stats[1].elements_produced, 10);  // The fill read exactly one buffer.
  ASSERT_TRUE(Drain(*it).ok());
  stats = it->Stats();
  EXPECT_EQ(stats[2].buffered_elements, 0);
  EXPECT_EQ(stats[2].buffered_bytes, 0);
  EXPECT_EQ(stats[2].elements_produced, 100);
}

// The elements in the buffer are held, not consumed, until handed on (NodeStats::inputs_held,
// which AUTOTUNE's input ratio subtracts: the first GetNext takes 10 inputs for 1 output);
// elements a checkpoint restored are not (the input never handed them over), and a destroyed
// iterator takes what it still held out of the count.
TEST(ShuffleTest, CountsTheInputsItsBufferHolds) {
  const Dataset ds = Dataset::Range(30).Shuffle(10, {.seed = 1});
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 1).ok());
  std::vector<NodeStatsSnapshot> stats = it->Stats();
  ASSERT_EQ(stats[1].name, "Shuffle[1]");
  EXPECT_EQ(stats[1].inputs_held, 9);
  EXPECT_EQ(stats[0].elements_produced - stats[1].elements_produced, 9);
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  std::shared_ptr<StatsRegistry> registry = it->stats_registry();
  it.reset();
  EXPECT_EQ(registry->Snapshot()[1].inputs_held, 0);

  auto restored = ds.MakeIterator();
  ASSERT_TRUE(restored->Restore(*saved).ok());
  // Each output now takes one input (counted while buffered) and hands on one buffered element.
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(Drain(*restored, 1).ok());
    EXPECT_EQ(restored->Stats()[1].inputs_held, 0);
  }
  ASSERT_TRUE(Drain(*restored).ok());
  EXPECT_EQ(restored->Stats()[1].inputs_held, 0);
}

TEST(ShuffleTest, CheckpointsResumeExactly) {
  // Range(30) with a buffer of 10: the first GetNext fills the buffer; outputs 1..20 each refill
  // one slot; the input ends at output 21 and the rest drains.
  auto ds = Dataset::Range(30).Shuffle(10, {.seed = 4});
  testing::ExpectCheckpointsResumeExactly(ds, {0, 1, 5, 10, 20, 21, 25, 29, 30});
  // A buffer larger than the input: everything after the first call is the drain phase.
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(8).Shuffle(100, {.seed = 4}),
                                          {0, 1, 4, 8});
  // The pipeline seed is restored with the checkpoint.
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(30).Shuffle(10).WithOptions({.seed = 77}),
                                          {0, 3, 24});
}

TEST(ShuffleTest, ReshuffleEachIterationGivesEachRepeatEpochItsOwnOrder) {
  auto epochs = [](const Dataset& ds) {
    auto v = ShuffledInts(ds);
    EXPECT_EQ(v.size(), 100u);
    std::vector<int64_t> a(v.begin(), v.begin() + 50), b(v.begin() + 50, v.end());
    EXPECT_EQ(Sorted(a), Iota(0, 50));
    EXPECT_EQ(Sorted(b), Iota(0, 50));
    return std::make_pair(a, b);
  };
  auto [a1, a2] = epochs(Dataset::Range(50).Shuffle(50, {.seed = 3}).Repeat(2));
  EXPECT_NE(a1, a2);
  // Reproducible: the same seed gives the same two epochs.
  auto [b1, b2] = epochs(Dataset::Range(50).Shuffle(50, {.seed = 3}).Repeat(2));
  EXPECT_EQ(a1, b1);
  EXPECT_EQ(a2, b2);
  // Without reshuffling every epoch has the same order.
  auto [c1, c2] = epochs(
      Dataset::Range(50).Shuffle(50, {.seed = 3, .reshuffle_each_iteration = false}).Repeat(2));
  EXPECT_EQ(c1, c2);
  EXPECT_NE(c1, Iota(0, 50));
  // The pipeline seed behaves the same way.
  auto [d1, d2] = epochs(Dataset::Range(50).Shuffle(50).Repeat(2).WithOptions({.seed = 8}));
  EXPECT_NE(d1, d2);
  auto [e1, e2] = epochs(Dataset::Range(50)
                             .Shuffle(50, {.reshuffle_each_iteration = false})
                             .Repeat(2)
                             .WithOptions({.seed = 8}));
  EXPECT_EQ(e1, e2);
}

TEST(ShuffleTest, CheckpointsResumeExactlyAcrossRepeatEpochs) {
  auto ds = Dataset::Range(12).Shuffle(5, {.seed = 6}).Repeat(3);
  testing::ExpectCheckpointsResumeExactly(ds, {0, 2, 11, 12, 13, 20, 30, 36});
}

// An internal iterator of `ds` with its own context: lets a test observe the iterator after an
// error (the user-facing Iterator makes errors sticky).
struct Internal {
  explicit Internal(const Dataset& ds) {
    ctx.runtime = std::make_shared<Runtime>(2);
    ctx.cancellation = std::make_shared<CancellationManager>();
    ctx.stats = std::make_shared<StatsRegistry>();
    ctx.seed = 5;
    base = ds.base();
  }
  std::unique_ptr<IteratorBase> Make() {
    auto it = base->MakeIterator(ctx);
    EXPECT_TRUE(it.ok()) << it.status();
    return std::move(*it);
  }
  IteratorContext ctx;
  std::shared_ptr<const DatasetBase> base;
};

// "v" for a value, "E" for an error; until the end.
std::vector<std::string> Trace(IteratorBase& it) {
  std::vector<std::string> out;
  for (int guard = 0; guard < 1000; ++guard) {
    auto e = it.GetNext();
    if (!e.ok()) {
      out.push_back(absl::StrCat("E:", e.status().message()));
      continue;
    }
    if (!e->has_value()) break;
    out.push_back(absl::StrCat((**e)[0].scalar<int64_t>()));
  }
  return out;
}

TEST(ShuffleTest, InputErrorDuringFillKeepsTheBufferAndCheckpointsMidFill) {
  // Element 5 fails while the first call fills the buffer of 10: the error comes out, the five
  // elements read so far stay buffered, and the next call goes on filling.
  auto ds = Dataset::Range(25)
                .Map([](Element e) -> absl::StatusOr<Element> {
                  if (e[0].scalar<int64_t>() == 5) return absl::DataLossError("bad record");
                  return e;
                })
                .Shuffle(10, {.seed = 3});
  Internal internal(ds);
  auto uninterrupted = Trace(*internal.Make());
  ASSERT_EQ(uninterrupted.size(), 25u);  // 24 values and the error.
  EXPECT_EQ(uninterrupted[0], "E:Map[1] at element 5: bad record");
  std::vector<int64_t> values;
  for (size_t i = 1; i < uninterrupted.size(); ++i) values.push_back(std::stoll(uninterrupted[i]));
  std::vector<int64_t> want = Iota(0, 25);
  want.erase(want.begin() + 5);
  EXPECT_EQ(Sorted(values), want);

  auto first = internal.Make();
  ASSERT_FALSE(first->GetNext().ok());  // Mid-fill: five elements buffered.
  EXPECT_EQ(first->stats().buffered_elements.load(), 5);
  proto::IteratorStateProto state;
  ASSERT_TRUE(first->Save(&state).ok());
  EXPECT_EQ(state.buffer_size(), 5);
  first.reset();
  auto resumed = internal.Make();
  ASSERT_TRUE(resumed->Restore(state).ok());
  auto rest = Trace(*resumed);
  EXPECT_THAT(rest, ElementsAreArray(uninterrupted.begin() + 1, uninterrupted.end()));
}

TEST(ShuffleTest, RestoreRejectsAnOversizedBuffer) {
  auto ds = Dataset::Range(30).Shuffle(10, {.seed = 4});
  Internal internal(ds);
  auto it = internal.Make();
  ASSERT_TRUE(it->GetNext().ok());
  proto::IteratorStateProto state;
  ASSERT_TRUE(it->Save(&state).ok());
  for (int i = 0; i < 5; ++i) *state.add_buffer() = state.buffer(0);
  auto fresh = internal.Make();
  auto s = fresh->Restore(state);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("Shuffle[1] holds 14 buffered elements"));
}

}  // namespace
}  // namespace sluice
