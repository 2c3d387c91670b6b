#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<std::string> Names(const std::vector<Element>& elements) {
  std::vector<std::string> out;
  for (const Element& e : elements) {
    EXPECT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].dtype(), DType::kBytes);
    EXPECT_EQ(e[0].rank(), 0);
    out.push_back(e[0].scalar<std::string>());
  }
  return out;
}

class ListFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("list_files_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    // Created out of order, so that sorting is what orders them.
    for (const char* name : {"b-01.rec", "a-02.rec", "a-00.rec", "c.txt", "a-01.rec"}) {
      std::ofstream(dir_ / name) << name;
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

TEST_F(ListFilesTest, SortedMatchesOfAllPatterns) {
  auto out = Collect(Dataset::ListFiles({Path("b-*.rec"), Path("a-*.rec")}, {.shuffle = false}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Names(*out),
              ElementsAre(Path("a-00.rec"), Path("a-01.rec"), Path("a-02.rec"), Path("b-01.rec")));
}

TEST_F(ListFilesTest, SinglePatternAndDuplicatesAcrossPatterns) {
  auto out =
      Collect(Dataset::ListFiles({Path("a-0[01].rec"), Path("a-00.rec")}, {.shuffle = false}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Names(*out), ElementsAre(Path("a-00.rec"), Path("a-01.rec")));
  auto one = Collect(Dataset::ListFiles(Path("*.txt")));
  ASSERT_TRUE(one.ok());
  EXPECT_THAT(Names(*one), ElementsAre(Path("c.txt")));
}

// As tf.data's list_files: a pattern that matches nothing (or whose directory does not exist) is
// no error while another matches; NotFound only when none matches anything, naming them all.
TEST_F(ListFilesTest, NotFoundOnlyWhenNoPatternMatches) {
  auto some = Collect(Dataset::ListFiles({Path("a-*.rec"), Path("z-*.rec"), Path("no-dir/*.rec")},
                                         {.shuffle = false}));
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_THAT(Names(*some), ElementsAre(Path("a-00.rec"), Path("a-01.rec"), Path("a-02.rec")));

  auto none = Dataset::ListFiles({Path("z-*.rec"), Path("y-*.rec")}).MakeIterator()->GetNext();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(),
              HasSubstr("ListFiles[0]: no files match any of the 2 patterns '" + Path("z-*.rec") +
                        "', '" + Path("y-*.rec") + "'"));
  // One pattern: Glob's message, which tells a pattern from a path.
  auto one = Dataset::ListFiles(Path("z-*.rec")).MakeIterator()->GetNext();
  EXPECT_EQ(one.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(one.status().message(), HasSubstr("no files match '" + Path("z-*.rec") + "'"));
}

TEST_F(ListFilesTest, GlobbedWhenTheIteratorIsMade) {
  auto ds = Dataset::ListFiles(Path("*.rec"));
  std::ofstream(Path("a-03.rec")) << "late";
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->size(), 5u);
}

TEST_F(ListFilesTest, EndOfSequenceRepeats) {
  auto it = Dataset::ListFiles(Path("b-*")).MakeIterator();
  auto got = Drain(*it);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 1u);
  for (int i = 0; i < 3; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok());
    EXPECT_FALSE(e->has_value());
  }
}

TEST_F(ListFilesTest, ShuffleIsASeededPermutation) {
  for (int i = 0; i < 20; ++i) std::ofstream(Path("s-" + std::to_string(100 + i)));
  auto sorted = Collect(Dataset::ListFiles(Path("s-*"), {.shuffle = false}));
  ASSERT_TRUE(sorted.ok());
  auto a = Collect(Dataset::ListFiles(Path("s-*"), {.shuffle = true, .seed = 7}));
  auto b = Collect(Dataset::ListFiles(Path("s-*"), {.shuffle = true, .seed = 7}));
  auto c = Collect(Dataset::ListFiles(Path("s-*"), {.shuffle = true, .seed = 8}));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(Names(*a), Names(*b));  // Reproducible.
  EXPECT_NE(Names(*a), Names(*c));  // Seeds matter.
  EXPECT_NE(Names(*a), Names(*sorted));
  std::vector<std::string> perm = Names(*a);
  std::sort(perm.begin(), perm.end());
  EXPECT_EQ(perm, Names(*sorted));  // A permutation: nothing lost or repeated.
}

// tf.data's list_files shuffles unless told not to; so does ListFiles.
TEST_F(ListFilesTest, ShufflesByDefaultAsTfData) {
  for (int i = 0; i < 20; ++i) std::ofstream(Path("s-" + std::to_string(100 + i)));
  auto by_default = Collect(Dataset::ListFiles(Path("s-*")).WithOptions({.seed = 5}));
  auto shuffled =
      Collect(Dataset::ListFiles(Path("s-*"), {.shuffle = true}).WithOptions({.seed = 5}));
  auto sorted = Collect(Dataset::ListFiles(Path("s-*"), {.shuffle = false}));
  ASSERT_TRUE(by_default.ok() && shuffled.ok() && sorted.ok());
  EXPECT_EQ(Names(*by_default), Names(*shuffled));
  EXPECT_NE(Names(*by_default), Names(*sorted));
  EXPECT_THAT(Dataset::ListFiles(Path("s-*"), {.shuffle = false}).DebugString(),
              HasSubstr(", sorted)"));
}

TEST_F(ListFilesTest, ShuffleWithoutSeedUsesThePipelineSeed) {
  for (int i = 0; i < 20; ++i) std::ofstream(Path("s-" + std::to_string(100 + i)));
  auto ds = Dataset::ListFiles(Path("s-*"), {.shuffle = true});
  auto a = Collect(ds.WithOptions({.seed = 1}));
  auto b = Collect(ds.WithOptions({.seed = 1}));
  auto c = Collect(ds.WithOptions({.seed = 2}));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(Names(*a), Names(*b));
  EXPECT_NE(Names(*a), Names(*c));
}

// Each repetition, and each new iteration of the dataset (tf.data's reshuffle_each_iteration),
// takes another order; the same dataset built again repeats the same orders.
TEST_F(ListFilesTest, ShuffleDiffersAcrossRepetitionsReproducibly) {
  for (int i = 0; i < 20; ++i) std::ofstream(Path("s-" + std::to_string(100 + i)));
  auto make = [&] {
    return Dataset::ListFiles(Path("s-*"), {.shuffle = true, .seed = 7}).Repeat(3);
  };
  const Dataset ds = make(), again = make();
  auto a = Collect(ds);
  auto b = Collect(again);
  auto second = Collect(ds);
  auto second_again = Collect(again);
  ASSERT_TRUE(a.ok() && b.ok() && second.ok() && second_again.ok());
  ASSERT_EQ(a->size(), 60u);
  const std::vector<std::string> names = Names(*a);
  EXPECT_EQ(names, Names(*b));
  EXPECT_NE(names, Names(*second));
  EXPECT_EQ(Names(*second), Names(*second_again));
  const std::vector<std::string> e0(names.begin(), names.begin() + 20);
  const std::vector<std::string> e1(names.begin() + 20, names.begin() + 40);
  const std::vector<std::string> e2(names.begin() + 40, names.end());
  EXPECT_NE(e0, e1);
  EXPECT_NE(e1, e2);
  EXPECT_EQ(std::set<std::string>(e0.begin(), e0.end()),
            std::set<std::string>(e1.begin(), e1.end()));
}

TEST_F(ListFilesTest, CheckpointResumesExactly) {
  testing::ExpectCheckpointsResumeExactly(Dataset::ListFiles(Path("*"), {.shuffle = false}),
                                          {0, 1, 3, 5});
  testing::ExpectCheckpointsResumeExactly(
      Dataset::ListFiles(Path("*"), {.shuffle = true, .seed = 3}), {0, 2, 5});
}

TEST_F(ListFilesTest, CheckpointKeepsTheListWhenFilesChange) {
  auto ds = Dataset::ListFiles(Path("a-*"), {.shuffle = false});
  auto it = ds.MakeIterator();
  auto first = Drain(*it, 1);
  ASSERT_TRUE(first.ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  std::ofstream(Path("a-000.rec")) << "sorts before a-01";
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto rest = Drain(*fresh);
  ASSERT_TRUE(rest.ok());
  EXPECT_THAT(Names(*rest), ElementsAre(Path("a-01.rec"), Path("a-02.rec")));
}

}  // namespace
}  // namespace sluice
