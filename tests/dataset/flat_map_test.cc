#include <set>
#include <string>

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
using ::testing::IsEmpty;

TEST(FlatMapTest, EmitsEachInnerDatasetInTurn) {
  auto ds = Dataset::Range(1, 5).FlatMap(Tens);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(10, 20, 21, 30, 31, 32, 40, 41, 42, 43));
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Dataset::Range(0).FlatMap(Tens).Cardinality(), 0);
}

TEST(FlatMapTest, EmptyInputAndEmptyInnerDatasets) {
  auto empty = Collect(Dataset::Range(0).FlatMap(Tens));
  ASSERT_TRUE(empty.ok());
  EXPECT_THAT(*empty, IsEmpty());
  // Range(0, 4) -> inner sizes 0, 1, 2, 3; the empty first one is skipped.
  auto some = Collect(Dataset::Range(0, 4).FlatMap(Tens));
  ASSERT_TRUE(some.ok());
  EXPECT_THAT(Ints(*some), ElementsAre(10, 20, 21, 30, 31, 32));
  auto all_empty = Collect(Dataset::Range(50).FlatMap(
      [](Element) -> absl::StatusOr<Dataset> { return Dataset::Range(0); }));
  ASSERT_TRUE(all_empty.ok());
  EXPECT_THAT(*all_empty, IsEmpty());
}

TEST(FlatMapTest, EndOfSequenceAtEveryPositionRepeats) {
  for (int64_t n = 1; n < 6; ++n) {
    auto it = Dataset::Range(1, n).FlatMap(Tens).MakeIterator();
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

TEST(FlatMapTest, FunctionErrorNamesFlatMapAndInputIndex) {
  auto ds = Dataset::Range(1, 5).FlatMap([](Element e) -> absl::StatusOr<Dataset> {
    if (Value(e) == 3) return absl::NotFoundError("no dataset for 3");
    return Tens(std::move(e));
  });
  auto it = ds.MakeIterator();
  auto first = Drain(*it, 3);
  ASSERT_TRUE(first.ok());
  EXPECT_THAT(Ints(*first), ElementsAre(10, 20, 21));
  auto next = it->GetNext();
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(next.status().message(), "FlatMap[1] at element 2: no dataset for 3");
  auto skipped = Collect(ds.IgnoreErrors());
  ASSERT_TRUE(skipped.ok());
  EXPECT_THAT(Ints(*skipped), ElementsAre(10, 20, 21, 40, 41, 42, 43));
}

TEST(FlatMapTest, InnerErrorsPassThroughNamedByTheInnerNode) {
  auto ds = Dataset::Range(1, 5).FlatMap([](Element e) -> absl::StatusOr<Dataset> {
    SLUICE_ASSIGN_OR_RETURN(Dataset inner, Tens(std::move(e)));
    return inner.Map([](Element v) -> absl::StatusOr<Element> {
      if (Value(v) == 31) return absl::DataLossError("bad 31");
      return v;
    });
  });
  auto got = Collect(ds);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "FlatMap[1]/Map[1] at element 1: bad 31");
  auto skipped = Collect(ds.IgnoreErrors());
  ASSERT_TRUE(skipped.ok());
  EXPECT_THAT(Ints(*skipped), ElementsAre(10, 20, 21, 30, 32, 40, 41, 42, 43));
}

TEST(FlatMapTest, InnerDatasetThatCannotStartIsNamed) {
  auto got = Collect(Dataset::Range(3).FlatMap(
      [](Element e) -> absl::StatusOr<Dataset> { return Dataset::Range(0, 5, Value(e) - 1); }));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "FlatMap[1] at element 1: Range[0]: step must not be 0");
}

TEST(FlatMapTest, EachInnerPipelineHasItsOwnSeedsReproducibly) {
  auto make = [](uint64_t seed) {
    return Dataset::Range(4).FlatMap(InnerSeeds).WithOptions({.seed = seed});
  };
  auto a = Collect(make(42));
  auto b = Collect(make(42));
  auto c = Collect(make(43));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  const std::vector<int64_t> seeds = Ints(*a);
  EXPECT_EQ(std::set<int64_t>(seeds.begin(), seeds.end()).size(), 12u);
  EXPECT_EQ(Ints(*b), seeds);
  EXPECT_NE(Ints(*c), seeds);
}

TEST(FlatMapTest, CheckpointResumesExactly) {
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(1, 5).FlatMap(Tens),
                                          {0, 1, 2, 3, 5, 9, 10});
  // Restored inner pipelines get their salts back.
  testing::ExpectCheckpointsResumeExactly(
      Dataset::Range(4).FlatMap(InnerSeeds).WithOptions({.seed = 3}), {0, 1, 4, 6, 11, 12});
}

}  // namespace
}  // namespace sluice
