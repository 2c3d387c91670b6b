#include "io/atomic_file.h"

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/file_util.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using ::sluice::testing::ReadFile;
using ::sluice::testing::ScopedTempDir;

TEST(AtomicFileTest, CommitRenamesTheTemporaryFileIntoPlace) {
  ScopedTempDir dir;
  const std::string path = dir.File("f.bin");
  auto file = AtomicFile::Create(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->path(), path);
  EXPECT_THAT((*file)->temp_path(), ::testing::StartsWith(path + ".tmp."));
  // ".tmp.<pid>.<n>.<host>": the host tells this machine's and PID namespace's writers apart.
  EXPECT_THAT((*file)->temp_path(), ::testing::EndsWith("." + AtomicFileHostTag()));
  EXPECT_THAT(AtomicFileHostTag(), ::testing::MatchesRegex("[0-9a-f]{8}-[0-9]+"));
  ASSERT_TRUE((*file)->Append("hello ").ok());
  ASSERT_TRUE((*file)->Append("world").ok());
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::exists((*file)->temp_path()));
  ASSERT_TRUE((*file)->Commit().ok());
  EXPECT_EQ(ReadFile(path), "hello world");
  EXPECT_EQ((*file)->bytes_appended(), 11u);
  EXPECT_EQ(dir.List(), std::vector<std::string>{"f.bin"});
}

TEST(AtomicFileTest, MixedSmallAndLargeAppendsKeepTheirOrder) {
  ScopedTempDir dir;
  const std::string path = dir.File("f.bin");
  auto file = AtomicFile::Create(path, {.sync = false, .buffer_size = 4096});
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    const std::string piece(static_cast<size_t>((i * 7919) % 10'000),
                            static_cast<char>('a' + i % 26));
    ASSERT_TRUE((*file)->Append(piece).ok());
    expected += piece;
  }
  ASSERT_TRUE((*file)->Commit().ok());
  EXPECT_EQ(ReadFile(path), expected);
}

TEST(AtomicFileTest, DestroyingWithoutCommitRemovesTheTemporaryAndKeepsTheOldFile) {
  ScopedTempDir dir;
  const std::string path = dir.File("f.bin");
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  std::string temp;
  {
    auto file = AtomicFile::Create(path);
    temp = (*file)->temp_path();
    ASSERT_TRUE((*file)->Append(std::string(1 << 20, 'n')).ok());
    EXPECT_TRUE(fs::exists(temp));
  }
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_EQ(ReadFile(path), "old");
  EXPECT_EQ(dir.List(), std::vector<std::string>{"f.bin"});
}

TEST(AtomicFileTest, AbandonRemovesTheTemporaryAndForbidsMore) {
  ScopedTempDir dir;
  auto file = AtomicFile::Create(dir.File("f.bin"));
  ASSERT_TRUE((*file)->Append("x").ok());
  (*file)->Abandon();
  EXPECT_EQ(dir.List(), std::vector<std::string>{});
  EXPECT_FALSE((*file)->Append("y").ok());
  EXPECT_FALSE((*file)->Commit().ok());
  EXPECT_EQ(dir.List(), std::vector<std::string>{});
}

// Descriptors this process holds open on `path`.
int OpenDescriptorsOn(const std::string& path) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(e.path(), ec) == fs::path(path)) ++n;
  }
  return n;
}

TEST(AtomicFileTest, AParkedFileHoldsNoDescriptorAndGoesOnWhereItWas) {
  ScopedTempDir dir;
  const std::string path = dir.File("f.bin");
  auto file = AtomicFile::Create(path, {.sync = false, .buffer_size = 4096});
  ASSERT_TRUE(file.ok());
  const std::string temp = (*file)->temp_path();
  ASSERT_TRUE((*file)->Append("one ").ok());
  EXPECT_EQ(OpenDescriptorsOn(temp), 1);
  ASSERT_TRUE((*file)->Park().ok());
  EXPECT_TRUE((*file)->parked());
  EXPECT_EQ(OpenDescriptorsOn(temp), 0);
  EXPECT_EQ(ReadFile(temp), "one ");   // flushed
  ASSERT_TRUE((*file)->Park().ok());   // twice is fine
  const std::string big(10'000, 'b');  // past the buffer: straight to the reopened file
  ASSERT_TRUE((*file)->Append("two ").ok());
  EXPECT_FALSE((*file)->parked());
  ASSERT_TRUE((*file)->Append(big).ok());
  ASSERT_TRUE((*file)->Park().ok());
  ASSERT_TRUE((*file)->Commit().ok());  // from parked
  EXPECT_EQ(ReadFile(path), "one two " + big);
  EXPECT_EQ(dir.List(), std::vector<std::string>{"f.bin"});
}

TEST(AtomicFileTest, AParkedFileDestroyedOrAbandonedLeavesNothing) {
  ScopedTempDir dir;
  {
    auto file = AtomicFile::Create(dir.File("a.bin"));
    ASSERT_TRUE((*file)->Append("x").ok());
    ASSERT_TRUE((*file)->Park().ok());
  }
  auto file = AtomicFile::Create(dir.File("b.bin"));
  ASSERT_TRUE((*file)->Append("x").ok());
  ASSERT_TRUE((*file)->Park().ok());
  (*file)->Abandon();
  EXPECT_EQ(dir.List(), std::vector<std::string>{});
  EXPECT_FALSE((*file)->Append("y").ok());
}

// The temporary file gone while parked (it is this process's, so only a mistake removes it): the
// reopen fails, naming it, and nothing is committed.
TEST(AtomicFileTest, AParkedFileWhoseTemporaryWentFailsClearly) {
  ScopedTempDir dir;
  auto file = AtomicFile::Create(dir.File("f.bin"));
  ASSERT_TRUE((*file)->Append("x").ok());
  ASSERT_TRUE((*file)->Park().ok());
  fs::remove((*file)->temp_path());
  const absl::Status appended = (*file)->Append("y");  // the reopen fails, and stays failed
  EXPECT_EQ(appended.code(), absl::StatusCode::kNotFound) << appended;
  const absl::Status s = (*file)->Commit();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()),
              ::testing::HasSubstr((*file)->temp_path() + ": cannot reopen"));
  EXPECT_EQ(dir.List(), std::vector<std::string>{});
}

TEST(AtomicFileTest, NothingAfterCommit) {
  ScopedTempDir dir;
  auto file = AtomicFile::Create(dir.File("f.bin"));
  ASSERT_TRUE((*file)->Commit().ok());
  EXPECT_EQ((*file)->Append("x").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*file)->Commit().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReadFile(dir.File("f.bin")), "");
}

TEST(AtomicFileTest, WriteFileAtomicallyReplacesContent) {
  ScopedTempDir dir;
  const std::string path = dir.File("f.txt");
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  EXPECT_EQ(ReadFile(path), "first");
  ASSERT_TRUE(WriteFileAtomically(path, std::string(1 << 20, 'z'), {.sync = false}).ok());
  EXPECT_EQ(ReadFile(path), std::string(1 << 20, 'z'));
  EXPECT_EQ(dir.List(), std::vector<std::string>{"f.txt"});
}

TEST(AtomicFileTest, TwoWritersOfOnePathUseDistinctTemporaries) {
  ScopedTempDir dir;
  const std::string path = dir.File("f");
  auto a = AtomicFile::Create(path);
  auto b = AtomicFile::Create(path);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->temp_path(), (*b)->temp_path());
  ASSERT_TRUE((*a)->Append("a").ok());
  ASSERT_TRUE((*b)->Append("b").ok());
  ASSERT_TRUE((*a)->Commit().ok());
  ASSERT_TRUE((*b)->Commit().ok());
  EXPECT_EQ(ReadFile(path), "b");  // The last commit wins, whole.
  EXPECT_EQ(dir.List(), std::vector<std::string>{"f"});
}

TEST(AtomicFileTest, NewFilesFollowTheUmask) {
  ScopedTempDir dir;
  const mode_t old = ::umask(022);
  ASSERT_TRUE(WriteFileAtomically(dir.File("f"), "x").ok());
  ::umask(old);
  struct stat st;
  ASSERT_EQ(::stat(dir.File("f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(AtomicFileTest, MissingDirectoryIsNotFound) {
  auto file = AtomicFile::Create("/nonexistent-dir/f");
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(file.status().message(), ::testing::HasSubstr("/nonexistent-dir/f"));
  EXPECT_EQ(WriteFileAtomically("/nonexistent-dir/f", "x").code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace sluice
