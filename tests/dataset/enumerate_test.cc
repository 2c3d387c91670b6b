#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::Ints;
using ::sluice::testing::Iota;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

TEST(EnumerateTest, PrependsAnInt64Counter) {
  auto ds = Dataset::FromTensorSlices({Tensor::FromVector<std::string>({"a", "b", "c"}),
                                       Tensor::FromVector<int64_t>({7, 8, 9})})
                .Enumerate();
  EXPECT_EQ(ds.Cardinality(), 3);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_THAT(Ints(*out), ElementsAre(0, 1, 2));
  for (int i = 0; i < 3; ++i) {
    const Element& e = (*out)[i];
    ASSERT_EQ(e.size(), 3u);
    EXPECT_EQ(e[0].dtype(), DType::kInt64);
    EXPECT_EQ(e[0].rank(), 0);
    EXPECT_EQ(e[1].scalar<std::string>(), std::string(1, static_cast<char>('a' + i)));
    EXPECT_EQ(e[2].scalar<int64_t>(), 7 + i);
  }
}

TEST(EnumerateTest, StartsAtStart) {
  auto out = Collect(Dataset::Range(4).Enumerate(-2));
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Ints(*out), ElementsAre(-2, -1, 0, 1));
}

// As tf.data's zip(range(start, INT64_MAX), input): the counter ends before INT64_MAX instead of
// overflowing.
TEST(EnumerateTest, TheCounterEndsBeforeInt64Max) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto ds = Dataset::Range(3).Enumerate(kMax - 2);
  EXPECT_EQ(ds.Cardinality(), 2);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Ints(*out), ElementsAre(kMax - 2, kMax - 1));
  EXPECT_EQ(Dataset::Range(3).Enumerate(5).Cardinality(), 3);
}

TEST(EnumerateTest, EmptyInput) {
  auto out = Collect(Dataset::Range(0).Enumerate());
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->empty());
}

TEST(EnumerateTest, EndOfSequenceRepeats) {
  auto it = Dataset::Range(2).Enumerate().MakeIterator();
  ASSERT_TRUE(Drain(*it).ok());
  for (int i = 0; i < 3; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok());
    EXPECT_FALSE(e->has_value());
  }
}

TEST(EnumerateTest, InputErrorPassesThroughAndDoesNotUseANumber) {
  auto ds = Dataset::Range(5)
                .Map([](Element e) -> absl::StatusOr<Element> {
                  if (e[0].scalar<int64_t>() == 1) return absl::InvalidArgumentError("bad");
                  return e;
                })
                .Enumerate(10);
  auto got = Collect(ds);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "Map[1] at element 1: bad");
  auto out = Collect(ds.IgnoreErrors());
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 4u);
  EXPECT_THAT(Ints(*out), ElementsAre(10, 11, 12, 13));
  EXPECT_EQ((*out)[1][1].scalar<int64_t>(), 2);
}

TEST(EnumerateTest, CheckpointResumesExactly) {
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(10).Enumerate(5), {0, 1, 6, 10});
}

}  // namespace
}  // namespace sluice
