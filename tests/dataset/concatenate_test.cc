#include "dataset/proto/iterator_state.pb.h"
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
using ::testing::HasSubstr;

TEST(ConcatenateTest, TheOthersElementsFollow) {
  auto ds = Dataset::Range(3).Concatenate(Dataset::Range(10, 14));
  EXPECT_EQ(ds.Cardinality(), 7);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(0, 1, 2, 10, 11, 12, 13));
}

TEST(ConcatenateTest, ShapesMayDiffer) {
  auto ds = Dataset::FromTensors({Tensor::FromVector<int64_t>({1, 2})})
                .Concatenate(Dataset::FromTensors({Tensor::FromVector<int64_t>({3, 4, 5})}));
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[1][0].num_elements(), 3);
}

TEST(ConcatenateTest, Cardinality) {
  auto unknown =
      Dataset::Range(3).Filter([](const Element&) -> absl::StatusOr<bool> { return true; });
  EXPECT_EQ(Dataset::Range(3).Concatenate(Dataset::Range(3).Repeat()).Cardinality(),
            kInfiniteCardinality);
  EXPECT_EQ(Dataset::Range(3).Concatenate(unknown).Cardinality(), kUnknownCardinality);
}

TEST(ConcatenateTest, EitherSideEmpty) {
  auto a = Collect(Dataset::Range(0).Concatenate(Dataset::Range(2)));
  auto b = Collect(Dataset::Range(2).Concatenate(Dataset::Range(0)));
  auto c = Collect(Dataset::Range(0).Concatenate(Dataset::Range(0)));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_THAT(Ints(*a), ElementsAre(0, 1));
  EXPECT_THAT(Ints(*b), ElementsAre(0, 1));
  EXPECT_TRUE(c->empty());
}

TEST(ConcatenateTest, EndOfSequenceAtEveryPosition) {
  for (int64_t n = 0; n <= 2; ++n) {
    for (int64_t m = 0; m <= 2; ++m) {
      auto it = Dataset::Range(n).Concatenate(Dataset::Range(m)).MakeIterator();
      auto got = Drain(*it);
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(static_cast<int64_t>(got->size()), n + m);
      for (int i = 0; i < 2; ++i) {
        auto e = it->GetNext();
        ASSERT_TRUE(e.ok());
        EXPECT_FALSE(e->has_value());
      }
    }
  }
}

TEST(ConcatenateTest, MismatchedDTypesNameTheElement) {
  auto strings = Dataset::FromTensorSlices(
      {Tensor::FromVector<int64_t>({7, 8}), Tensor::FromVector<std::string>({"x", "y"})});
  auto ints = Dataset::Zip({Dataset::Range(2), Dataset::Range(2)});
  auto ds = ints.Concatenate(strings);
  auto it = ds.MakeIterator();
  auto got = Drain(*it);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(),
            "Concatenate[2] at element 2: element 0 of the appended dataset has components "
            "(int64, bytes), expected (int64, int64) like the first dataset's elements");
  // Not sticky inside the pipeline: the next element is checked on its own.
  auto out = Collect(ds.IgnoreErrors());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->size(), 2u);
}

TEST(ConcatenateTest, DifferentComponentCountIsAnError) {
  auto ds = Dataset::Range(1).Concatenate(Dataset::Range(1).Enumerate());
  auto got = Collect(ds);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("has components (int64, int64), expected (int64)"));
}

TEST(ConcatenateTest, ErrorsFromEitherInputPassThrough) {
  auto bad_at = [](int64_t k) {
    return Dataset::Range(3).Map([k](Element e) -> absl::StatusOr<Element> {
      if (e[0].scalar<int64_t>() == k) return absl::DataLossError("broken");
      return e;
    });
  };
  auto first = Collect(bad_at(1).Concatenate(Dataset::Range(3)));
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().message(), "Map[1] at element 1: broken");
  auto second = bad_at(1).Concatenate(bad_at(2)).IgnoreErrors();
  auto out = Collect(second);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(0, 2, 0, 1));
}

TEST(ConcatenateTest, CheckpointResumesExactly) {
  auto ds = Dataset::Range(4).Concatenate(Dataset::Range(10, 13));
  testing::ExpectCheckpointsResumeExactly(ds, {0, 2, 4, 5, 7});
  auto empty_first = Dataset::Range(0).Concatenate(Dataset::Range(3));
  testing::ExpectCheckpointsResumeExactly(empty_first, {0, 1, 3});
}

TEST(ConcatenateTest, CheckpointKeepsTheDTypeCheck) {
  auto ds = Dataset::Range(2).Concatenate(
      Dataset::FromTensorSlices({Tensor::FromVector<std::string>({"x"})}));
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 2).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto e = fresh->GetNext();
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("has components (bytes), expected (int64)"));
}

// Found by iterator_restore_fuzzer: a checkpoint saying "reading the first input" without that
// input's state restored, and the next GetNext called through a null iterator.
TEST(ConcatenateTest, RestoreRefusesAStageThatDoesNotMatchTheSavedInputs) {
  auto ds = Dataset::Range(4).Concatenate(Dataset::Range(10, 13));
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 2).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  proto::IteratorCheckpoint checkpoint;
  ASSERT_TRUE(checkpoint.ParseFromString(*saved));
  proto::IteratorStateProto* concat = checkpoint.mutable_root();
  ASSERT_EQ(concat->ints().at("stage"), 0);
  concat->set_input_present(0, false);
  auto fresh = ds.MakeIterator();
  absl::Status s = fresh->Restore(checkpoint.SerializeAsString());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("stage 0 without the first input's state"));
}

TEST(ConcatenateTest, TheTwoHalvesAreSeparateNodesWithTheirOwnRandomness) {
  // Both inputs are a Shuffle at depth 1: as one node they shuffled alike and counted as one.
  auto ds = Dataset::Range(40)
                .Shuffle(40)
                .Concatenate(Dataset::Range(40).Shuffle(40))
                .WithOptions({.seed = 11});
  auto it = ds.MakeIterator();
  auto out = Drain(*it);
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<int64_t> v = Ints(*out);
  ASSERT_EQ(v.size(), 80u);
  EXPECT_NE(std::vector<int64_t>(v.begin(), v.begin() + 40),
            std::vector<int64_t>(v.begin() + 40, v.end()));
  int named = 0;
  for (const auto& s : it->Stats()) {
    if (s.name == "Shuffle[1]" || s.name == "Concatenate[2].1:Shuffle[1]") {
      EXPECT_EQ(s.elements_produced, 40) << s.name;
      ++named;
    }
  }
  EXPECT_EQ(named, 2);
  testing::ExpectCheckpointsResumeExactly(ds, {0, 39, 40, 63});
}

}  // namespace
}  // namespace sluice
