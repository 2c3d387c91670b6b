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

PredicateFn IsEven() {
  return [](const Element& e) -> absl::StatusOr<bool> { return Value(e) % 2 == 0; };
}

TEST(FilterTest, KeepsElementsThePredicateAccepts) {
  auto ds = Dataset::Range(10).Filter(IsEven());
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(0, 2, 4, 6, 8));
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Dataset::Range(0).Filter(IsEven()).Cardinality(), 0);
}

TEST(FilterTest, EmptyInputAndNothingAccepted) {
  auto empty = Collect(Dataset::Range(0).Filter(IsEven()));
  ASSERT_TRUE(empty.ok());
  EXPECT_THAT(*empty, IsEmpty());
  auto none = Collect(
      Dataset::Range(100).Filter([](const Element&) -> absl::StatusOr<bool> { return false; }));
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(*none, IsEmpty());
}

TEST(FilterTest, EndOfSequenceAtEveryPositionRepeats) {
  for (int64_t n = 0; n < 6; ++n) {
    auto it = Dataset::Range(n).Filter(IsEven()).MakeIterator();
    auto got = Drain(*it);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(static_cast<int64_t>(got->size()), (n + 1) / 2) << n;
    for (int i = 0; i < 3; ++i) {
      auto e = it->GetNext();
      ASSERT_TRUE(e.ok());
      EXPECT_FALSE(e->has_value());
    }
  }
}

TEST(FilterTest, PredicateErrorNamesFilterAndInputIndex) {
  auto ds = Dataset::Range(10).Filter([](const Element& e) -> absl::StatusOr<bool> {
    if (Value(e) == 5) return absl::InvalidArgumentError("cannot judge 5");
    return Value(e) % 2 == 0;
  });
  auto it = ds.MakeIterator();
  std::vector<int64_t> before;
  absl::Status error;
  while (true) {
    auto e = it->GetNext();
    if (!e.ok()) {
      error = e.status();
      break;
    }
    ASSERT_TRUE(e->has_value());
    before.push_back(Value(**e));
  }
  EXPECT_THAT(before, ElementsAre(0, 2, 4));
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument);
  // Input element 5, although only 3 elements were output.
  EXPECT_EQ(error.message(), "Filter[1] at element 5: cannot judge 5");
}

TEST(FilterTest, InputErrorPassesThroughAndFilterContinuesAfterIt) {
  auto failing = Dataset::Range(10).Map([](Element e) -> absl::StatusOr<Element> {
    if (Value(e) == 4) return absl::DataLossError("bad 4");
    return e;
  });
  auto got = Collect(failing.Filter(IsEven()));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "Map[1] at element 4: bad 4");
  // Internal iterators are not sticky: past the error the filter goes on.
  auto skipped = Collect(failing.Filter(IsEven()).IgnoreErrors());
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  EXPECT_THAT(Ints(*skipped), ElementsAre(0, 2, 6, 8));
}

TEST(FilterTest, CheckpointResumesExactly) {
  auto ds = Dataset::Range(20).Filter(
      [](const Element& e) -> absl::StatusOr<bool> { return Value(e) % 3 == 0; });
  testing::ExpectCheckpointsResumeExactly(ds, {0, 1, 3, 6, 7});
}

TEST(FilterTest, CheckpointKeepsTheInputIndexForErrors) {
  auto ds = Dataset::Range(10).Filter([](const Element& e) -> absl::StatusOr<bool> {
    if (Value(e) == 7) return absl::InvalidArgumentError("seven");
    return Value(e) % 2 == 0;
  });
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 2).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto rest = Drain(*fresh);
  ASSERT_FALSE(rest.ok());
  EXPECT_EQ(rest.status().message(), "Filter[1] at element 7: seven");
}

class FilterAfterMapTest : public ::testing::TestWithParam<int> {};

TEST_P(FilterAfterMapTest, SameOutputWhateverTheMapParallelism) {
  auto ds = Dataset::Range(200)
                .Map([](Element e) -> absl::StatusOr<Element> { return e; },
                     {.num_parallel_calls = GetParam()})
                .Filter([](const Element& e) -> absl::StatusOr<bool> { return Value(e) % 7 == 3; });
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok());
  std::vector<int64_t> want;
  for (int64_t i = 3; i < 200; i += 7) want.push_back(i);
  EXPECT_EQ(Ints(*out), want);
}

INSTANTIATE_TEST_SUITE_P(Parallelism, FilterAfterMapTest, ::testing::Values(1, 2, 8));

}  // namespace
}  // namespace sluice
