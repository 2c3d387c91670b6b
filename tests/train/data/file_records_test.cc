#include "train/data/file_records.h"

#include <cerrno>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/os_error.h"
#include "dataset/iterator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::train::data {
namespace {

using ::testing::HasSubstr;

TEST(FileRecordsTest, EachRecordCarriesItsIndexAndFile) {
  const std::string file = std::string(SLUICE_TEST_DATA) + "/images3.tfrecord";
  std::unique_ptr<Iterator> it = FileRecords(file, {}).MakeIterator();
  std::vector<int64_t> indices;
  while (true) {
    absl::StatusOr<std::optional<Element>> next = it->GetNext();
    ASSERT_TRUE(next.ok()) << next.status();
    if (!next->has_value()) break;
    const Element& e = **next;
    ASSERT_EQ(e.size(), 3u);
    EXPECT_FALSE(e[kRecordComponent].scalar<std::string>().empty());
    EXPECT_EQ(e[kFileComponent].scalar<std::string>(), file);
    indices.push_back(e[kIndexComponent].scalar<int64_t>());
  }
  EXPECT_EQ(indices, (std::vector<int64_t>{0, 1, 2}));
}

TEST(FileRecordsTest, AtRecordNamesTheRecordAndKeepsTheError) {
  const absl::Status decode = OsError(EIO, "decode");
  const absl::Status at = AtRecord(decode, "a.tfrecord", 7);
  EXPECT_EQ(at.code(), decode.code());
  EXPECT_EQ(at.message(), "a.tfrecord: record 7: " + std::string(decode.message()));
  EXPECT_EQ(ErrnoOf(at), EIO);  // the payload stays
  EXPECT_THAT(AtRecord(decode, "photo.jpg", -1).message(), HasSubstr("photo.jpg: decode"));
  EXPECT_TRUE(AtRecord(absl::OkStatus(), "a.tfrecord", 7).ok());
}

}  // namespace
}  // namespace sluice::train::data
