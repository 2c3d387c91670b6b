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
  // The second input's nodes are named under the Zip: "Map[1]" alone would not say which.
  EXPECT_EQ(got.status().message(), "Zip[2].1:Map[1] at element 2: bad 2");
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

// Each input's element seeds (ElementContext::seed of a Map at depth 1).
Dataset Seeds() {
  return Dataset::Range(20).Map([](Element, const ElementContext& c) -> absl::StatusOr<Element> {
    return Element{Tensor::Scalar<int64_t>(static_cast<int64_t>(c.seed))};
  });
}

const NodeStatsSnapshot* Find(const std::vector<NodeStatsSnapshot>& stats,
                              const std::string& name) {
  for (const auto& s : stats) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

TEST(ZipTest, InputsOfOneDepthAreSeparateNodes) {
  // Both inputs have a Map at depth 1: one stats entry, one knob, would merge them.
  auto identity = [](Element e) -> absl::StatusOr<Element> { return e; };
  auto ds = Dataset::Zip({Dataset::Range(10).Map(identity, {.num_parallel_calls = 2}),
                          Dataset::Range(7).Map(identity)});
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it).ok());
  const auto stats = it->Stats();
  const NodeStatsSnapshot* first = Find(stats, "Map[1]");
  const NodeStatsSnapshot* second = Find(stats, "Zip[2].1:Map[1]");
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(first->kind, NodeKind::kAsync);
  EXPECT_EQ(first->parallelism, 2);
  EXPECT_EQ(second->kind, NodeKind::kSync);
  EXPECT_EQ(second->parallelism, -1);
  EXPECT_EQ(second->elements_produced, 7);
  EXPECT_GE(first->elements_produced, 7);
}

TEST(ZipTest, RandomOpsInTwoInputsDrawApart) {
  auto ds = Dataset::Zip({Seeds(), Seeds()}).WithOptions({.seed = 5});
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 20u);
  for (const Element& e : *out) EXPECT_NE(e[0].scalar<int64_t>(), e[1].scalar<int64_t>());
  // Still reproducible from the pipeline seed (a pipeline built again: each iterator of one
  // dataset is its next iteration, with another salt).
  auto again = Collect(Dataset::Zip({Seeds(), Seeds()}).WithOptions({.seed = 5}));
  ASSERT_TRUE(again.ok());
  for (size_t i = 0; i < out->size(); ++i) EXPECT_TRUE(ElementsEqual((*out)[i], (*again)[i]));

  // Unseeded Shuffles of one dataset zipped with itself: two orders.
  auto shuffled = Dataset::Range(50).Shuffle(50);
  auto pairs = Collect(Dataset::Zip({shuffled, shuffled}).WithOptions({.seed = 5}));
  ASSERT_TRUE(pairs.ok());
  int differ = 0;
  for (const Element& e : *pairs) differ += e[0].scalar<int64_t>() != e[1].scalar<int64_t>();
  EXPECT_GT(differ, 40);
  // An op's own seed stays its own: the same seed in both inputs keeps them aligned, as in
  // tf.data (zip(a.shuffle(seed=1), b.shuffle(seed=1))).
  auto seeded = Dataset::Range(50).Shuffle(50, {.seed = 1});
  auto aligned = Collect(Dataset::Zip({seeded, seeded}));
  ASSERT_TRUE(aligned.ok());
  for (const Element& e : *aligned) EXPECT_EQ(e[0].scalar<int64_t>(), e[1].scalar<int64_t>());
}

TEST(ZipTest, CheckpointOfShuffledInputsResumesExactly) {
  auto ds = Dataset::Zip({Dataset::Range(30).Shuffle(8), Dataset::Range(30).Shuffle(8), Seeds()})
                .WithOptions({.seed = 3});
  testing::ExpectCheckpointsResumeExactly(ds, {0, 7, 19});
}

}  // namespace
}  // namespace sluice
