#include <mutex>
#include <string>
#include <vector>

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
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Fails elements whose value satisfies `fail`.
Dataset FailingRange(int64_t n, std::function<bool(int64_t)> fail, int parallel = 1) {
  return Dataset::Range(n).Map(
      [fail](Element e) -> absl::StatusOr<Element> {
        if (fail(Value(e))) return absl::DataLossError("bad " + std::to_string(Value(e)));
        return e;
      },
      {.num_parallel_calls = parallel});
}

int64_t Skipped(const Iterator& it, const std::string& node) {
  for (const auto& s : it.Stats()) {
    if (s.name == node) return s.skipped;
  }
  ADD_FAILURE() << "no node " << node;
  return -1;
}

class IgnoreErrorsTest : public ::testing::TestWithParam<int> {};

TEST_P(IgnoreErrorsTest, DropsFailedElementsCountsThemAndContinues) {
  auto ds = FailingRange(
                10, [](int64_t v) { return v == 3 || v == 7; }, GetParam())
                .IgnoreErrors();
  auto it = ds.MakeIterator();
  auto out = Drain(*it);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(0, 1, 2, 4, 5, 6, 8, 9));
  EXPECT_EQ(Skipped(*it, "IgnoreErrors[2]"), 2);
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
}

TEST_P(IgnoreErrorsTest, OnErrorSeesEachDroppedError) {
  std::mutex mu;
  std::vector<std::string> seen;
  auto ds = FailingRange(
                10, [](int64_t v) { return v == 3 || v == 7; }, GetParam())
                .IgnoreErrors([&](const absl::Status& status) {
                  std::lock_guard<std::mutex> l(mu);
                  seen.push_back(std::string(status.message()));
                });
  auto it = ds.MakeIterator();
  auto out = Drain(*it);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(0, 1, 2, 4, 5, 6, 8, 9));
  // In order, and named by the node and element that failed.
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_THAT(seen[0], HasSubstr("bad 3"));
  EXPECT_THAT(seen[1], HasSubstr("bad 7"));
  EXPECT_THAT(seen[0], HasSubstr("Map[1]"));
}

TEST_P(IgnoreErrorsTest, EverythingFailing) {
  auto ds = FailingRange(
                25, [](int64_t) { return true; }, GetParam())
                .IgnoreErrors();
  auto it = ds.MakeIterator();
  auto out = Drain(*it);
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(*out, IsEmpty());
  EXPECT_EQ(Skipped(*it, "IgnoreErrors[2]"), 25);
}

TEST_P(IgnoreErrorsTest, CancellationIsNotIgnored) {
  auto ds = Dataset::Range(10)
                .Map(
                    [](Element e) -> absl::StatusOr<Element> {
                      if (Value(e) == 4) return absl::CancelledError("stop");
                      return e;
                    },
                    {.num_parallel_calls = GetParam()})
                .IgnoreErrors();
  auto it = ds.MakeIterator();
  auto first = Drain(*it, 4);
  ASSERT_TRUE(first.ok());
  EXPECT_THAT(Ints(*first), ElementsAre(0, 1, 2, 3));
  auto next = it->GetNext();
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(Skipped(*it, "IgnoreErrors[2]"), 0);
}

TEST_P(IgnoreErrorsTest, CheckpointResumesExactly) {
  auto ds = FailingRange(
                20, [](int64_t v) { return v % 5 == 2; }, GetParam())
                .IgnoreErrors();
  testing::ExpectCheckpointsResumeExactly(ds, {0, 1, 2, 5, 15, 16});
}

INSTANTIATE_TEST_SUITE_P(Parallelism, IgnoreErrorsTest, ::testing::Values(1, 2, 8));

TEST(IgnoreErrorsTest, EmptyInputAndEndRepeats) {
  auto it = Dataset::Range(0).IgnoreErrors().MakeIterator();
  for (int i = 0; i < 3; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok());
    EXPECT_FALSE(e->has_value());
  }
  EXPECT_EQ(Dataset::Range(0).IgnoreErrors().Cardinality(), 0);
}

TEST(IgnoreErrorsTest, WithoutItTheFirstErrorStops) {
  auto got = Collect(FailingRange(10, [](int64_t v) { return v == 3; }));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "Map[1] at element 3: bad 3");
}

}  // namespace
}  // namespace sluice
