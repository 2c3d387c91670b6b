#include "io/read_file.h"

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <optional>
#include <string>

#include "core/os_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/file_util.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;

std::string ReadFileTempPath(const std::string& name) {
  return ::testing::TempDir() + "/read_file_test_" + name + "_" + std::to_string(getpid());
}

TEST(ReadFileToStringTest, ReadsEveryByteUpToTheLimit) {
  const std::string path = ReadFileTempPath("bytes");
  std::string bytes(300000, '\0');  // more than one read(2) may return, NULs included
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 13 + i / 7);
  testing::WriteFile(path, bytes);
  absl::StatusOr<std::string> read = ReadFileToString(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, bytes);
  EXPECT_TRUE(ReadFileToString(path, bytes.size()).ok());
  const absl::Status over = ReadFileToString(path, bytes.size() - 1).status();
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted) << over;
  EXPECT_THAT(std::string(over.message()),
              HasSubstr(path + ": 300000 bytes, over the limit of 299999"));
  testing::WriteFile(path, "");
  EXPECT_EQ(ReadFileToString(path).value_or("x"), "");
  std::filesystem::remove(path);
}

TEST(ReadFileToStringTest, MissingFileAndDirectoryAreClearErrors) {
  const std::string path = ReadFileTempPath("missing");
  const absl::Status missing = ReadFileToString(path).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound) << missing;
  EXPECT_THAT(std::string(missing.message()), HasSubstr(path));
  const absl::Status dir = ReadFileToString(::testing::TempDir()).status();
  EXPECT_FALSE(dir.ok());
  EXPECT_THAT(std::string(dir.message()), HasSubstr("is a directory"));
  // The errno travels with the status (Python raises FileNotFoundError, IsADirectoryError).
  EXPECT_EQ(ErrnoOf(missing), std::optional<int>(ENOENT));
  EXPECT_EQ(ErrnoOf(dir), std::optional<int>(EISDIR));
}

}  // namespace
}  // namespace sluice
