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

TEST(ShardTest, EveryNumShardsThElementStartingAtIndex) {
  auto s0 = Collect(Dataset::Range(10).Shard(3, 0));
  auto s1 = Collect(Dataset::Range(10).Shard(3, 1));
  auto s2 = Collect(Dataset::Range(10).Shard(3, 2));
  ASSERT_TRUE(s0.ok() && s1.ok() && s2.ok());
  EXPECT_THAT(Ints(*s0), ElementsAre(0, 3, 6, 9));
  EXPECT_THAT(Ints(*s1), ElementsAre(1, 4, 7));
  EXPECT_THAT(Ints(*s2), ElementsAre(2, 5, 8));
  auto one = Collect(Dataset::Range(5).Shard(1, 0));
  ASSERT_TRUE(one.ok());
  EXPECT_THAT(Ints(*one), ElementsAre(0, 1, 2, 3, 4));
}

TEST(ShardTest, Cardinality) {
  EXPECT_EQ(Dataset::Range(10).Shard(3, 0).Cardinality(), 4);
  EXPECT_EQ(Dataset::Range(10).Shard(3, 1).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(10).Shard(3, 2).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(2).Shard(3, 2).Cardinality(), 0);
  EXPECT_EQ(Dataset::Range(10).Repeat().Shard(3, 2).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Dataset::Range(10).Shard(0, 0).Cardinality(), kUnknownCardinality);
}

TEST(ShardTest, InvalidArgumentsAreClearErrors) {
  struct Case {
    int64_t num_shards, index;
    std::string message;
  };
  for (const Case& c : {Case{0, 0, "Shard[1]: num_shards must be >= 1, got 0"},
                        Case{-2, 0, "Shard[1]: num_shards must be >= 1, got -2"},
                        Case{3, 3, "Shard[1]: index must be in [0, 3), got 3"},
                        Case{3, -1, "Shard[1]: index must be in [0, 3), got -1"}}) {
    auto got = Collect(Dataset::Range(10).Shard(c.num_shards, c.index));
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(got.status().message(), c.message);
  }
}

TEST(ShardTest, EmptyInputAndEndAtEveryPosition) {
  auto empty = Collect(Dataset::Range(0).Shard(2, 1));
  ASSERT_TRUE(empty.ok());
  EXPECT_THAT(*empty, IsEmpty());
  for (int64_t n = 0; n < 7; ++n) {
    auto it = Dataset::Range(n).Shard(3, 1).MakeIterator();
    auto got = Drain(*it);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(static_cast<int64_t>(got->size()), Dataset::Range(n).Shard(3, 1).Cardinality());
    for (int i = 0; i < 3; ++i) {
      auto e = it->GetNext();
      ASSERT_TRUE(e.ok());
      EXPECT_FALSE(e->has_value());
    }
  }
}

TEST(ShardTest, AnErrorTakesItsPositionAndReachesOnlyItsShard) {
  auto failing = Dataset::Range(10).Map([](Element e) -> absl::StatusOr<Element> {
    if (Value(e) == 4) return absl::DataLossError("bad 4");
    return e;
  });
  // Element 4 belongs to shard 1 of 3.
  auto s0 = Collect(failing.Shard(3, 0));
  ASSERT_TRUE(s0.ok()) << s0.status();
  EXPECT_THAT(Ints(*s0), ElementsAre(0, 3, 6, 9));
  auto s1 = Collect(failing.Shard(3, 1));
  ASSERT_FALSE(s1.ok());
  EXPECT_EQ(s1.status().message(), "Map[1] at element 4: bad 4");
  auto skipped = Collect(failing.Shard(3, 1).IgnoreErrors());
  ASSERT_TRUE(skipped.ok());
  EXPECT_THAT(Ints(*skipped), ElementsAre(1, 7));  // still aligned after the error
}

TEST(ShardTest, SameOutputWhateverTheInputParallelism) {
  for (int p : {1, 2, 8}) {
    auto out = Collect(
        Dataset::Range(100)
            .Map([](Element e) -> absl::StatusOr<Element> { return e; }, {.num_parallel_calls = p})
            .Shard(4, 3));
    ASSERT_TRUE(out.ok());
    std::vector<int64_t> want;
    for (int64_t i = 3; i < 100; i += 4) want.push_back(i);
    EXPECT_EQ(Ints(*out), want) << p;
  }
}

TEST(ShardTest, CheckpointResumesExactly) {
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(20).Shard(3, 1), {0, 1, 3, 6, 7});
}

}  // namespace
}  // namespace sluice
