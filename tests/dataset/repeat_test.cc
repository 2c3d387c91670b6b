#include <set>
#include <string>

#include "dataset/proto/iterator_state.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::Ints;
using ::sluice::testing::Value;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Each element replaced by (part of) its Map seed.
Dataset Seeds(int64_t n, int parallel = 1) {
  return Dataset::Range(n).Map(
      [](Element, const ElementContext& c) -> absl::StatusOr<Element> {
        return Element{Tensor::Scalar<int64_t>(static_cast<int64_t>(c.seed >> 1))};
      },
      {.num_parallel_calls = parallel});
}

TEST(RepeatTest, RepeatsCountTimes) {
  auto ds = Dataset::Range(4).Repeat(3);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Ints(*out), ElementsAre(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3));
  EXPECT_EQ(ds.Cardinality(), 12);
  EXPECT_EQ(ds.DebugString(), "Range(0, 4, 1) -> Repeat(3)");
}

TEST(RepeatTest, RepeatsForever) {
  auto ds = Dataset::Range(3).Repeat();
  EXPECT_EQ(ds.Cardinality(), kInfiniteCardinality);
  auto it = ds.MakeIterator();
  auto out = Drain(*it, 3000);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->size(), 3000u);
  for (size_t i = 0; i < out->size(); ++i) ASSERT_EQ(Value((*out)[i]), static_cast<int64_t>(i % 3));
  EXPECT_EQ(Dataset::Range(3).Repeat(-5).Cardinality(), kInfiniteCardinality);
}

TEST(RepeatTest, ZeroTimesAndEmptyInputsEnd) {
  auto zero = Collect(Dataset::Range(4).Repeat(0));
  ASSERT_TRUE(zero.ok());
  EXPECT_THAT(*zero, IsEmpty());
  EXPECT_EQ(Dataset::Range(4).Repeat(0).Cardinality(), 0);
  // An empty input repeated forever ends instead of spinning.
  auto forever_empty = Collect(Dataset::Range(0).Repeat());
  ASSERT_TRUE(forever_empty.ok());
  EXPECT_THAT(*forever_empty, IsEmpty());
  EXPECT_EQ(Dataset::Range(0).Repeat().Cardinality(), 0);
  // Also when only running it shows the input to be empty.
  auto nothing_passes =
      Dataset::Range(5).Filter([](const Element&) -> absl::StatusOr<bool> { return false; });
  EXPECT_EQ(nothing_passes.Repeat().Cardinality(), kUnknownCardinality);
  auto filtered = Collect(nothing_passes.Repeat());
  ASSERT_TRUE(filtered.ok());
  EXPECT_THAT(*filtered, IsEmpty());
  auto finite_empty = Collect(Dataset::Range(0).Repeat(1000));
  ASSERT_TRUE(finite_empty.ok());
  EXPECT_THAT(*finite_empty, IsEmpty());
}

TEST(RepeatTest, EndOfSequenceAtEveryPositionRepeats) {
  for (int64_t n = 0; n < 4; ++n) {
    for (int64_t count = 0; count < 3; ++count) {
      auto it = Dataset::Range(n).Repeat(count).MakeIterator();
      auto got = Drain(*it);
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(static_cast<int64_t>(got->size()), n * count);
      for (int i = 0; i < 3; ++i) {
        auto e = it->GetNext();
        ASSERT_TRUE(e.ok());
        EXPECT_FALSE(e->has_value());
      }
    }
  }
}

TEST(RepeatTest, CardinalityOfUnknownAndInfiniteInputs) {
  auto unknown =
      Dataset::Range(5).Filter([](const Element&) -> absl::StatusOr<bool> { return true; });
  EXPECT_EQ(unknown.Repeat(3).Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Dataset::Range(5).Repeat().Repeat(2).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Dataset::Range(int64_t{1} << 40).Repeat(int64_t{1} << 40).Cardinality(),
            kUnknownCardinality);  // would overflow
}

TEST(RepeatTest, EachRepetitionHasItsOwnSeedsReproducibly) {
  auto make = [](uint64_t seed, int parallel) {
    return Seeds(5, parallel).Repeat(2).WithOptions({.seed = seed});
  };
  auto a = Collect(make(42, 1));
  ASSERT_TRUE(a.ok());
  const std::vector<int64_t> seeds = Ints(*a);
  ASSERT_EQ(seeds.size(), 10u);
  // The Map sees indices 0..4 in both epochs: only the salt tells them apart.
  std::set<int64_t> epoch0(seeds.begin(), seeds.begin() + 5);
  std::set<int64_t> epoch1(seeds.begin() + 5, seeds.end());
  EXPECT_EQ(epoch0.size(), 5u);
  EXPECT_EQ(epoch1.size(), 5u);
  for (int64_t s : epoch1) EXPECT_EQ(epoch0.count(s), 0u);
  for (int parallel : {1, 2, 8}) {
    auto again = Collect(make(42, parallel));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(Ints(*again), seeds) << parallel;
  }
  auto other = Collect(make(43, 1));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(Ints(*other), seeds);
}

TEST(RepeatTest, ErrorsPassThroughAndRepetitionsContinue) {
  auto failing = Dataset::Range(4).Map([](Element e) -> absl::StatusOr<Element> {
    if (Value(e) == 2) return absl::DataLossError("bad 2");
    return e;
  });
  auto got = Collect(failing.Repeat(2));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "Map[1] at element 2: bad 2");
  auto skipped = Collect(failing.Repeat(2).IgnoreErrors());
  ASSERT_TRUE(skipped.ok());
  EXPECT_THAT(Ints(*skipped), ElementsAre(0, 1, 3, 0, 1, 3));
}

TEST(RepeatTest, AnInputThatFailsToStartIsReportedByTheFirstGetNext) {
  auto got = Collect(Dataset::Range(0, 10, 0).Repeat(2));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RepeatTest, CheckpointAcrossEpochBoundaries) {
  auto ds = Dataset::Range(5)
                .Map([](Element e) -> absl::StatusOr<Element> {
                  return Element{Tensor::Scalar<int64_t>(Value(e) * 3)};
                })
                .Repeat(3);
  testing::ExpectCheckpointsResumeExactly(ds, {0, 2, 4, 5, 6, 10, 14, 15});
}

// Found by iterator_restore_fuzzer (a 25-s timeout in CI): a checkpoint at a repetition below 0
// (or past the count) repeated the input for up to 2^63 epochs.
TEST(RepeatTest, RestoreRefusesARepetitionOutsideTheCount) {
  auto ds = Dataset::Range(3).Repeat(2);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 4).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  proto::IteratorCheckpoint checkpoint;
  ASSERT_TRUE(checkpoint.ParseFromString(*saved));
  ASSERT_EQ(checkpoint.root().ints().at("repetition"), 1);
  for (int64_t repetition : {int64_t{-1000000000000}, int64_t{-1}, int64_t{3}}) {
    (*checkpoint.mutable_root()->mutable_ints())["repetition"] = repetition;
    auto fresh = ds.MakeIterator();
    absl::Status s = fresh->Restore(checkpoint.SerializeAsString());
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << repetition;
    EXPECT_THAT(s.message(), ::testing::HasSubstr("is at repetition")) << repetition;
  }
}

TEST(RepeatTest, CheckpointRestoresTheRepetitionsSalt) {
  for (int parallel : {1, 4}) {
    auto ds = Seeds(3, parallel).Repeat(3).WithOptions({.seed = 7});
    testing::ExpectCheckpointsResumeExactly(ds, {0, 2, 3, 4, 7, 9});
  }
}

TEST(RepeatTest, CheckpointWhileRepeatingForever) {
  auto ds = Seeds(3).Repeat();
  auto it = ds.MakeIterator();
  auto first = Drain(*it, 4);
  ASSERT_TRUE(first.ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  auto more = Drain(*it, 7);
  ASSERT_TRUE(more.ok());
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto resumed = Drain(*fresh, 7);
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(Ints(*resumed), Ints(*more));
  // Epoch 2 (elements 6..8) differs from epoch 1 (3..5).
  std::vector<int64_t> all = Ints(*first);
  for (int64_t v : Ints(*more)) all.push_back(v);
  EXPECT_NE(std::vector<int64_t>(all.begin() + 3, all.begin() + 6),
            std::vector<int64_t>(all.begin() + 6, all.begin() + 9));
}

}  // namespace
}  // namespace sluice
