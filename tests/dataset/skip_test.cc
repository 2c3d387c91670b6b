#include <algorithm>
#include <atomic>
#include <memory>
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

TEST(SkipTest, SkipsTheFirstElements) {
  auto out = Collect(Dataset::Range(10).Skip(3));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(Ints(*out), Iota(3, 10));
  auto zero = Collect(Dataset::Range(4).Skip(0));
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(Ints(*zero), Iota(0, 4));
  auto past = Collect(Dataset::Range(4).Skip(10));
  ASSERT_TRUE(past.ok());
  EXPECT_TRUE(past->empty());
  EXPECT_EQ(Dataset::Range(10).Skip(3).DebugString(), "Range(0, 10, 1) -> Skip(3)");
}

TEST(SkipTest, NegativeSkipsEverythingWithoutReading) {
  auto pulled = std::make_shared<std::atomic<int>>(0);
  auto ds = Dataset::Range(100)
                .Map([pulled](Element e) -> absl::StatusOr<Element> {
                  ++*pulled;
                  return e;
                })
                .Skip(-1);
  EXPECT_EQ(ds.Cardinality(), 0);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->empty());
  EXPECT_EQ(pulled->load(), 0);
}

TEST(SkipTest, Cardinality) {
  EXPECT_EQ(Dataset::Range(10).Skip(3).Cardinality(), 7);
  EXPECT_EQ(Dataset::Range(2).Skip(3).Cardinality(), 0);
  EXPECT_EQ(Dataset::Range(10).Skip(0).Cardinality(), 10);
  EXPECT_EQ(Dataset::Range(10).Batch(3).Unbatch().Skip(2).Cardinality(), kUnknownCardinality);
}

TEST(SkipTest, EmptyInputAndEndOfSequenceAtEveryPosition) {
  for (int64_t n : {0, 1, 2, 3, 4}) {
    for (int64_t count : {-1, 0, 2, 5}) {
      auto it = Dataset::Range(n).Skip(count).MakeIterator();
      auto got = Drain(*it);
      ASSERT_TRUE(got.ok());
      const int64_t start = count < 0 ? n : std::min(n, count);
      EXPECT_EQ(Ints(*got), Iota(start, n)) << n << " " << count;
      for (int i = 0; i < 2; ++i) {
        auto e = it->GetNext();
        ASSERT_TRUE(e.ok());
        EXPECT_FALSE(e->has_value());
      }
    }
  }
}

Dataset FailingAtIndex(int64_t n, int64_t bad) {
  return Dataset::Range(n).Map([bad](Element e) -> absl::StatusOr<Element> {
    if (e[0].scalar<int64_t>() == bad) return absl::InvalidArgumentError("bad");
    return e;
  });
}

TEST(SkipTest, ErrorsWhileSkippingPassThroughAndDoNotCount) {
  auto ds = FailingAtIndex(10, 1).Skip(3);
  auto user = ds.MakeIterator();
  auto got = Drain(*user);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "Map[1] at element 1: bad");
  EXPECT_EQ(user->GetNext().status(), got.status());

  auto it = ds.base()->MakeIterator(TestContext());
  ASSERT_TRUE(it.ok());
  EXPECT_FALSE((*it)->GetNext().ok());
  // 0 was skipped before the error; 2 and 3 complete the count of 3.
  auto rest = (*it)->GetNext();
  ASSERT_TRUE(rest.ok() && rest->has_value());
  EXPECT_EQ((**rest)[0].scalar<int64_t>(), 4);
}

TEST(SkipTest, SkippedCountSurvivesACheckpointTakenMidSkip) {
  // The error interrupts skipping after one element; the checkpoint must
  // remember that one so the restored iterator skips only two more.
  auto ds = FailingAtIndex(10, 1).Skip(3);
  auto it = ds.base()->MakeIterator(TestContext());
  ASSERT_TRUE(it.ok());
  ASSERT_FALSE((*it)->GetNext().ok());
  proto::IteratorStateProto state;
  ASSERT_TRUE((*it)->Save(&state).ok());
  EXPECT_EQ(state.ints().at("skipped"), 1);
  it->reset();
  auto fresh = ds.base()->MakeIterator(TestContext());
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE((*fresh)->Restore(state).ok());
  std::vector<int64_t> values;
  while (true) {
    auto e = (*fresh)->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    if (!e->has_value()) break;
    values.push_back((**e)[0].scalar<int64_t>());
  }
  EXPECT_EQ(values, Iota(4, 10));
}

TEST(SkipTest, CheckpointResumesExactly) {
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(10).Skip(4), {0, 1, 5, 6});
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(3).Skip(5), {0});
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(10).Skip(4).Take(3).Skip(1), {0, 1, 2});
}

}  // namespace
}  // namespace sluice
