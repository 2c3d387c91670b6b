#include "train/recipes/count_records.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/temp_dir.h"
#include "tests/train/recipes/recipe_test_util.h"

namespace sluice::train::recipes {
namespace {

using ::sluice::testing::ScopedTempDir;
using ::sluice::train::recipes::testing::WriteRawImages;
using ::testing::HasSubstr;

TEST(CountRecordsTest, CountsEveryFileUpToTheLimit) {
  ScopedTempDir dir;
  ASSERT_NO_FATAL_FAILURE(WriteRawImages(dir.File("a.tfrecord"), 5));
  ASSERT_NO_FATAL_FAILURE(WriteRawImages(dir.File("b.tfrecord"), 7));
  const std::string pattern = dir.File("*.tfrecord");
  EXPECT_EQ(CountRecords(pattern).value_or(-1), 12);
  EXPECT_EQ(CountRecords(pattern, {.limit = 8}).value_or(-1), 8);
  EXPECT_EQ(CountRecords(pattern, {.limit = 3}).value_or(-1), 3);
  EXPECT_EQ(CountRecords(pattern, {.limit = 100}).value_or(-1), 12);
  absl::StatusOr<int64_t> none = CountRecords(dir.File("missing-*.tfrecord"));
  EXPECT_TRUE(absl::IsNotFound(none.status()));
  EXPECT_THAT(none.status().message(), HasSubstr("missing-*.tfrecord"));
}

// A file cut in the middle of its last record cannot be indexed: an error, unless the records
// that can be read are counted instead.
TEST(CountRecordsTest, ATruncatedFileFailsUnlessSkippingErrors) {
  ScopedTempDir dir;
  const std::string path = dir.File("cut.tfrecord");
  ASSERT_NO_FATAL_FAILURE(WriteRawImages(path, 4));
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 10);
  EXPECT_FALSE(CountRecords(path).ok());
  EXPECT_EQ(CountRecords(path, {.skip_errors = true}).value_or(-1), 3);
}

}  // namespace
}  // namespace sluice::train::recipes
