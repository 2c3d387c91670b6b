#include "train/recipes/skipped_records.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace sluice::train::recipes {
namespace {

TEST(SkippedRecordsTest, CountsEachRecordOnceAndKeepsTheFirst) {
  SkippedRecords skipped;
  EXPECT_EQ(skipped.count(), 0);
  EXPECT_EQ(skipped.first(), "");
  skipped.Add(absl::DataLossError("a.tfrecord: record 3 at offset 120: bad CRC"));
  skipped.Add(absl::DataLossError("a.tfrecord: record 9 at offset 400: bad CRC"));
  // The next pass meets the first record again.
  skipped.Add(absl::DataLossError("a.tfrecord: record 3 at offset 120: bad CRC"));
  EXPECT_EQ(skipped.count(), 2);
  EXPECT_EQ(skipped.first(), "a.tfrecord: record 3 at offset 120: bad CRC");
}

// A file met at another position of the next pass (the files are shuffled) is the same record.
TEST(SkippedRecordsTest, ThePipelinesElementPositionDoesNotMakeANewRecord) {
  SkippedRecords skipped;
  skipped.Add(absl::InvalidArgumentError("Map[2] at element 1: cat/bad.jpg: not a JPEG"));
  skipped.Add(absl::InvalidArgumentError("Map[2] at element 14: cat/bad.jpg: not a JPEG"));
  skipped.Add(absl::InvalidArgumentError("Map[2] at element 14: dog/bad.jpg: not a JPEG"));
  // Not a node's position: kept whole.
  skipped.Add(absl::InvalidArgumentError("x at element 7 of the batch: bad"));
  skipped.Add(absl::InvalidArgumentError("x at element 8 of the batch: bad"));
  EXPECT_EQ(skipped.count(), 4);
  EXPECT_EQ(skipped.first(), "Map[2] at element 1: cat/bad.jpg: not a JPEG");
}

TEST(SkippedRecordsTest, TakesRecordsFromManyThreads) {
  SkippedRecords skipped;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&skipped, t] {
      // Threads 0 and 1 skip the same records, as two passes would.
      for (int i = 0; i < 100; ++i) skipped.Add(absl::DataLossError(absl::StrCat(t / 2, ":", i)));
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(skipped.count(), 200);
}

}  // namespace
}  // namespace sluice::train::recipes
