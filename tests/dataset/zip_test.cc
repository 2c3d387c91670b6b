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

// Element i of input 1 (int64 i * 10, bytes "s<i>").
Dataset Pairs(int64_t n) {
  return Dataset::Range(n).Map([](Element e) -> absl::StatusOr<Element> {
    const int64_t i = e[0].scalar<int64_t>();
    return Element{Tensor::Scalar<int64_t>(i * 10),
                   Tensor::Scalar<std::string>(absl::StrCat("s", i))};
  });
}

TEST(ZipTest, ConcatenatesComponentsAndEndsWithTheShortest) {
  auto ds = Dataset::Zip({Dataset::Range(5), Pairs(3), Dataset::Range(100, 200)});
  EXPECT_EQ(ds.Cardinality(), 3);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  for (int64_t i = 0; i < 3; ++i) {
    const Element& e = (*out)[i];
    ASSERT_EQ(e.size(), 4u);
    EXPECT_EQ(e[0].scalar<int64_t>(), i);
    EXPECT_EQ(e[1].scalar<int64_t>(), i * 10);
    EXPECT_EQ(e[2].scalar<std::string>(), absl::StrCat("s", i));
    EXPECT_EQ(e[3].scalar<int64_t>(), 100 + i);
  }
}

TEST(ZipTest, MemberZipPairsTwoDatasets) {
  auto ds = Dataset::Range(4).Zip(Dataset::Range(10, 20));
  EXPECT_EQ(ds.Cardinality(), 4);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->size(), 4u);
  EXPECT_EQ((*out)[3][0].scalar<int64_t>(), 3);
  EXPECT_EQ((*out)[3][1].scalar<int64_t>(), 13);
}

TEST(ZipTest, CardinalityFollowsTfData) {
  auto inf = Dataset::Range(3).Repeat();
  auto unknown =
      Dataset::Range(3).Filter([](const Element&) -> absl::StatusOr<bool> { return true; });
  EXPECT_EQ(Dataset::Zip({inf, Dataset::Range(7)}).Cardinality(), 7);
  EXPECT_EQ(Dataset::Zip({inf, inf}).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Dataset::Zip({unknown, Dataset::Range(7)}).Cardinality(), kUnknownCardinality);
}

TEST(ZipTest, EmptyInput) {
  auto out = Collect(Dataset::Zip({Dataset::Range(5), Dataset::Range(0)}));
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->empty());
}

TEST(ZipTest, NoDatasetsIsAnError) {
  auto out = Collect(Dataset::Zip(std::vector<Dataset>{}));
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("at least one dataset"));
}

TEST(ZipTest, EndOfSequenceAtEveryPosition) {
  for (int64_t n = 0; n <= 3; ++n) {
    auto it = Dataset::Zip({Dataset::Range(n), Dataset::Range(10)}).MakeIterator();
    auto got = Drain(*it);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(static_cast<int64_t>(got->size()), n);
    for (int i = 0; i < 2; ++i) {
      auto e = it->GetNext();
      ASSERT_TRUE(e.ok());
      EXPECT_FALSE(e->has_value());
    }
  }
}

TEST(ZipTest, InputErrorPassesThroughNamedAndKeepsInputsAligned) {
  auto failing = Dataset::Range(6).Map([](Element e) -> absl::StatusOr<Element> {
    if (e[0].scalar<int64_t>() == 2) return absl::InvalidArgumentError("bad 2");
    return e;
  });
  auto ds = Dataset::Zip({Dataset::Range(100, 106), failing});
  auto it = ds.MakeIterator();
  auto got = Drain(*it);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "Map[1] at element 2: bad 2");
  // Under IgnoreErrors the failed tuple is dropped whole: pairs stay aligned.
  auto out = Collect(ds.IgnoreErrors());
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 5u);
  for (const Element& e : *out) {
    EXPECT_EQ(e[0].scalar<int64_t>(), 100 + e[1].scalar<int64_t>()) << ElementDebugString(e);
  }
  EXPECT_THAT(Ints(*out), ElementsAre(100, 101, 103, 104, 105));
}

TEST(ZipTest, CheckpointResumesExactly) {
  auto ds = Dataset::Zip({Dataset::Range(8), Pairs(6), Dataset::Range(3, 100)});
  testing::ExpectCheckpointsResumeExactly(ds, {0, 1, 4, 5, 6});
}

}  // namespace
}  // namespace sluice
