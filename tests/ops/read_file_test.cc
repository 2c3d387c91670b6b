#include "ops/read_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "core/os_error.h"
#include "gtest/gtest.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

using ::sluice::testing::ScopedTempDir;

TEST(ReadFileTest, ReturnsTheWholeFileAsABytesScalar) {
  ScopedTempDir dir;
  std::string contents(100000, '\0');
  for (size_t i = 0; i < contents.size(); ++i) contents[i] = static_cast<char>(i * 7 + i / 300);
  const std::string path = dir.Write("a.bin", contents);
  auto t = ReadFile(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kBytes);
  EXPECT_EQ(t->shape(), Shape{});
  EXPECT_EQ(t->scalar<std::string>(), contents);
}

TEST(ReadFileTest, AnEmptyFileIsAnEmptyString) {
  ScopedTempDir dir;
  auto t = ReadFile(dir.Write("empty", ""));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->scalar<std::string>(), "");
}

TEST(ReadFileTest, AMissingFileIsNotFoundNamingIt) {
  ScopedTempDir dir;
  auto t = ReadFile(dir.File("nope.jpg"));
  ASSERT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find(dir.File("nope.jpg")), std::string::npos) << t.status();
}

// As a TFRecord reader says it, with EISDIR kept (Python raises IsADirectoryError).
TEST(ReadFileTest, ADirectoryIsSaidToBeOne) {
  ScopedTempDir dir;
  auto t = ReadFile(dir.path());
  ASSERT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition) << t.status();
  EXPECT_EQ(ErrnoOf(t.status()), EISDIR);
  EXPECT_NE(t.status().message().find(dir.path() + ": is a directory, not a file"),
            std::string::npos)
      << t.status();
}

TEST(ReadFileTest, AFileOverTheLimitFailsBeforeReadingAndNamesTheLimit) {
  ScopedTempDir dir;
  const std::string path = dir.Write("big", std::string(1001, 'x'));
  EXPECT_TRUE(ReadFile(path, {.max_bytes = 1001}).ok());
  auto t = ReadFile(path, {.max_bytes = 1000});
  ASSERT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(t.status().message().find("max_bytes (1000)"), std::string::npos) << t.status();
  EXPECT_NE(t.status().message().find(path), std::string::npos) << t.status();
}

TEST(ReadFileTest, AnUnreadableFileIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  ScopedTempDir dir;
  const std::string path = dir.Write("locked", "x");
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  EXPECT_EQ(ReadFile(path).status().code(), absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace sluice
