#include <cstdint>
#include <limits>
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
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RangeTest, StartStopStepBothWays) {
  auto up = Collect(Dataset::Range(2, 11, 3));
  ASSERT_TRUE(up.ok());
  EXPECT_THAT(Ints(*up), ElementsAre(2, 5, 8));
  auto down = Collect(Dataset::Range(5, -1, -2));
  ASSERT_TRUE(down.ok());
  EXPECT_THAT(Ints(*down), ElementsAre(5, 3, 1));
}

// The step past the last element would overflow int64 (undefined behaviour): the range ends.
TEST(RangeTest, EndsAtTheInt64LimitsInsteadOfWrapping) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  auto up = Collect(Dataset::Range(kMax - 10, kMax, 7));
  ASSERT_TRUE(up.ok());
  EXPECT_THAT(Ints(*up), ElementsAre(kMax - 10, kMax - 3));
  auto down = Collect(Dataset::Range(kMin + 10, kMin, -7));
  ASSERT_TRUE(down.ok());
  EXPECT_THAT(Ints(*down), ElementsAre(kMin + 10, kMin + 3));
  // And a checkpoint taken there restores to the end.
  auto ds = Dataset::Range(kMax - 10, kMax, 7);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto next = fresh->GetNext();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
}

// Counted in 128 bits: (stop - start + step - 1) / step overflowed int64 for wide ranges, and the
// negative count then refused every restore of them.
TEST(RangeTest, CardinalityOfRangesNearTheInt64Limits) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(Dataset::Range(0, kMax, 2).Cardinality(), kMax / 2 + 1);
  EXPECT_EQ(Dataset::Range(-1, kMax).Cardinality(), kMax);  // 2^63 elements, counted as INT64_MAX
  EXPECT_EQ(Dataset::Range(kMax, kMin, -3).Cardinality(), (kMax / 3) * 2 + 1);
  EXPECT_EQ(Dataset::Range(kMin, kMax, kMax).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(5, 0).Cardinality(), 0);
  // A checkpoint mid-way through such a range restores.
  auto ds = Dataset::Range(0, kMax, 2);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 3).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto next = fresh->GetNext();
  ASSERT_TRUE(next.ok() && next->has_value());
  EXPECT_EQ((**next)[0].scalar<int64_t>(), 6);
}

// Found by iterator_restore_fuzzer (a 25-s timeout in CI): a checkpoint whose position is far
// outside the range made Range yield up to 2^63 elements.
TEST(RangeTest, RestoreRefusesAPositionOutsideTheRange) {
  auto ds = Dataset::Range(10, 20, 2);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 2).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  proto::IteratorCheckpoint checkpoint;
  ASSERT_TRUE(checkpoint.ParseFromString(*saved));
  ASSERT_EQ(checkpoint.root().ints().at("next"), 14);
  for (int64_t next : {16, 20}) {  // a later element, and the end: both fine
    (*checkpoint.mutable_root()->mutable_ints())["next"] = next;
    auto fresh = ds.MakeIterator();
    ASSERT_TRUE(fresh->Restore(checkpoint.SerializeAsString()).ok()) << next;
    auto rest = Drain(*fresh);
    ASSERT_TRUE(rest.ok());
    EXPECT_EQ(static_cast<int64_t>(rest->size()), (20 - next) / 2);
  }
  for (int64_t next : {int64_t{-4000000000000000000}, int64_t{8}, int64_t{15}, int64_t{22}}) {
    (*checkpoint.mutable_root()->mutable_ints())["next"] = next;
    auto fresh = ds.MakeIterator();
    absl::Status s = fresh->Restore(checkpoint.SerializeAsString());
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << next;
    EXPECT_THAT(s.message(), HasSubstr("not in the range")) << next;
  }
}

}  // namespace
}  // namespace sluice
