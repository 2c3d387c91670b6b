#include "dataset/auto_shard.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Ints;
using ::testing::HasSubstr;

class AutoShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("auto_shard_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    for (int i = 0; i < 7; ++i) std::ofstream(dir_ / absl::StrCat("f", i, ".rec")) << i;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Pattern() const { return (dir_ / "f*.rec").string(); }

  // Every file name shard `index` of `n` lists, over two passes (a new order each pass).
  std::vector<std::string> Files(const Dataset& files, int64_t n, int64_t index,
                                 AutoShardPolicy policy = AutoShardPolicy::kAuto) {
    absl::StatusOr<ShardedDataset> shard = AutoShard(files, n, index, policy);
    EXPECT_TRUE(shard.ok()) << shard.status();
    if (!shard.ok()) return {};
    EXPECT_EQ(shard->policy, AutoShardPolicy::kFile);
    absl::StatusOr<std::vector<Element>> out = Collect(shard->dataset.Repeat(2));
    EXPECT_TRUE(out.ok());
    std::vector<std::string> names;
    for (const Element& e : *out) names.push_back(e[0].scalar<std::string>());
    return names;
  }

  std::filesystem::path dir_;
};

// Each shard lists its own files; together the shards list each file once, however each
// shard's unseeded shuffle orders them.
TEST_F(AutoShardTest, ByFileShardsAreDisjointAndCoverTheListing) {
  const Dataset files = Dataset::ListFiles(Pattern(), {.shuffle = true});
  std::map<std::string, int> seen;
  for (int64_t index = 0; index < 3; ++index) {
    const std::vector<std::string> names = Files(files, 3, index);
    EXPECT_EQ(names.size(), 2u * (index == 0 ? 3 : 2)) << index;  // 7 files: 3, 2, 2; 2 passes
    for (size_t i = 0; i < names.size() / 2; ++i) ++seen[names[i]];
  }
  ASSERT_EQ(seen.size(), 7u);
  for (const auto& [name, count] : seen) EXPECT_EQ(count, 1) << name;
}

// A pattern that matches nothing beside one that matches is no error for ListFiles (as tf.data's);
// auto-sharding counts the same listing (it globbed strictly, and failed with NotFound).
TEST_F(AutoShardTest, ByFileCountsAListingWhoseOtherPatternMatchesNothing) {
  const Dataset files = Dataset::ListFiles(
      std::vector<std::string>{Pattern(), (dir_ / "none*.rec").string()}, {.shuffle = false});
  std::map<std::string, int> seen;
  for (int64_t index = 0; index < 2; ++index) {
    const std::vector<std::string> names = Files(files, 2, index);
    for (size_t i = 0; i < names.size() / 2; ++i) ++seen[names[i]];
  }
  EXPECT_EQ(seen.size(), 7u);
}

TEST_F(AutoShardTest, ByFileDescribesWhatItKept) {
  absl::StatusOr<ShardedDataset> shard =
      AutoShard(Dataset::ListFiles(Pattern()).Map([](Element e) { return e; }), 2, 1);
  ASSERT_TRUE(shard.ok()) << shard.status();
  EXPECT_EQ(shard->policy, AutoShardPolicy::kFile);
  EXPECT_THAT(shard->description, HasSubstr("by file"));
  EXPECT_THAT(shard->description, HasSubstr("3 of 7 files"));
}

// Fewer files than shards: auto falls back to elements; file refuses, saying why.
TEST_F(AutoShardTest, TooFewFilesFallBackToElementsOrFail) {
  const Dataset files = Dataset::ListFiles(Pattern(), {.shuffle = false});
  absl::StatusOr<ShardedDataset> auto_shard = AutoShard(files, 8, 3);
  ASSERT_TRUE(auto_shard.ok());
  EXPECT_EQ(auto_shard->policy, AutoShardPolicy::kData);
  absl::StatusOr<std::vector<Element>> out = Collect(auto_shard->dataset);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->size(), 1u);  // the 4th of 7 names
  EXPECT_EQ((*out)[0][0].scalar<std::string>(), (dir_ / "f3.rec").string());

  absl::StatusOr<ShardedDataset> by_file = AutoShard(files, 8, 3, AutoShardPolicy::kFile);
  EXPECT_EQ(by_file.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(by_file.status().message(), HasSubstr("lists 7 files, fewer than 8 shards"));
  EXPECT_THAT(AutoShard(Dataset::Range(10), 2, 0, AutoShardPolicy::kFile).status().message(),
              HasSubstr("has no ListFiles"));
}

TEST_F(AutoShardTest, ByElementWithoutFilesAndOff) {
  absl::StatusOr<ShardedDataset> shard = AutoShard(Dataset::Range(10), 3, 2);
  ASSERT_TRUE(shard.ok());
  EXPECT_EQ(shard->policy, AutoShardPolicy::kData);
  absl::StatusOr<std::vector<Element>> out = Collect(shard->dataset);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(Ints(*out), (std::vector<int64_t>{2, 5, 8}));
  absl::StatusOr<ShardedDataset> off = AutoShard(Dataset::Range(10), 3, 2, AutoShardPolicy::kOff);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->dataset.Cardinality(), 10);
  EXPECT_EQ(AutoShard(Dataset::Range(10), 3, 3).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAutoShardPolicy("file").value(), AutoShardPolicy::kFile);
  EXPECT_FALSE(ParseAutoShardPolicy("files").ok());
}

TEST_F(AutoShardTest, AnInvalidFileShardOptionIsAnError) {
  absl::StatusOr<std::vector<Element>> out =
      Collect(Dataset::ListFiles(Pattern()).WithOptions(Options{.file_shard = FileShard{2, 2}}));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("file shard 2 of 2 is invalid"));
}

}  // namespace
}  // namespace sluice
