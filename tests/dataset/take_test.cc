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

TEST(TakeTest, TakesTheFirstElements) {
  auto out = Collect(Dataset::Range(10).Take(3));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(Ints(*out), Iota(0, 3));
  auto all = Collect(Dataset::Range(10).Take(-1));
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(Ints(*all), Iota(0, 10));
  auto more = Collect(Dataset::Range(4).Take(100));
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(Ints(*more), Iota(0, 4));
  auto none = Collect(Dataset::Range(4).Take(0));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(Dataset::Range(10).Take(3).DebugString(), "Range(0, 10, 1) -> Take(3)");
}

TEST(TakeTest, Cardinality) {
  EXPECT_EQ(Dataset::Range(10).Take(3).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(2).Take(3).Cardinality(), 2);
  EXPECT_EQ(Dataset::Range(10).Take(-1).Cardinality(), 10);
  EXPECT_EQ(Dataset::Range(10).Take(0).Cardinality(), 0);
  EXPECT_EQ(Dataset::Range(10).Batch(3).Unbatch().Take(4).Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Dataset::Range(10).Batch(3).Unbatch().Take(0).Cardinality(), 0);
}

TEST(TakeTest, DoesNotReadPastTheCount) {
  auto pulled = std::make_shared<std::atomic<int>>(0);
  auto ds = Dataset::Range(100)
                .Map([pulled](Element e) -> absl::StatusOr<Element> {
                  ++*pulled;
                  return e;
                })
                .Take(3);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it).ok());
  for (int i = 0; i < 3; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok());
    EXPECT_FALSE(e->has_value());
  }
  EXPECT_EQ(pulled->load(), 3);
}

TEST(TakeTest, EmptyInputAndEndOfSequenceAtEveryPosition) {
  for (int64_t n : {0, 1, 2, 3, 4}) {
    for (int64_t count : {-1, 0, 2, 5}) {
      auto it = Dataset::Range(n).Take(count).MakeIterator();
      auto got = Drain(*it);
      ASSERT_TRUE(got.ok());
      const int64_t want = count < 0 ? n : std::min(n, count);
      EXPECT_EQ(Ints(*got), Iota(0, want)) << n << " " << count;
      for (int i = 0; i < 2; ++i) {
        auto e = it->GetNext();
        ASSERT_TRUE(e.ok());
        EXPECT_FALSE(e->has_value());
      }
    }
  }
}

TEST(TakeTest, ErrorsPassThroughAndDoNotCount) {
  auto ds = Dataset::Range(10)
                .Map([](Element e) -> absl::StatusOr<Element> {
                  if (e[0].scalar<int64_t>() == 1) return absl::InvalidArgumentError("bad");
                  return e;
                })
                .Take(3);
  auto user = ds.MakeIterator();
  auto got = Drain(*user);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "Map[1] at element 1: bad");
  EXPECT_EQ(user->GetNext().status(), got.status());
  IteratorContext ctx;
  ctx.runtime = std::make_shared<Runtime>(2);
  ctx.cancellation = std::make_shared<CancellationManager>();
  ctx.stats = std::make_shared<StatsRegistry>();
  auto it = ds.base()->MakeIterator(ctx);
  ASSERT_TRUE(it.ok());
  std::vector<int64_t> values;
  int errors = 0;
  while (true) {
    auto e = (*it)->GetNext();
    if (!e.ok()) {
      ++errors;
      continue;
    }
    if (!e->has_value()) break;
    values.push_back((**e)[0].scalar<int64_t>());
  }
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(values, std::vector<int64_t>({0, 2, 3}));
}

TEST(TakeTest, CheckpointResumesExactly) {
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(10).Take(4), {0, 1, 3, 4});
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(3).Take(5), {0, 2, 3});
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(5).Take(-1), {0, 2, 5});
}

}  // namespace
}  // namespace sluice
