// SummaryWriter (train/summary_writer.h): the event file is read back with our TFRecord reader
// and parsed as TensorBoard would.
#include "train/callbacks/summary_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "io/tfrecord_reader.h"
#include "train/proto/event.pb.h"

namespace sluice::train::callbacks {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string SummaryDir(const std::string& name) {
  std::string dir =
      ::testing::TempDir() + "/summary_writer_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

std::vector<proto::Event> ReadEvents(const std::string& path) {
  std::vector<proto::Event> events;
  auto reader = TFRecordReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return events;
  std::string record;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->ReadRecord(&record);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    proto::Event e;
    EXPECT_TRUE(e.ParseFromString(record));
    events.push_back(e);
  }
  return events;
}

TEST(SummaryWriterTest, WritesTensorBoardEventFile) {
  const std::string dir = SummaryDir("basic");
  auto writer = SummaryWriter::Create(dir + "/run");
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::string path = (*writer)->path();
  EXPECT_THAT(path, StartsWith(dir + "/run/events.out.tfevents."));
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  EXPECT_THAT(std::filesystem::path(path).filename().string(), HasSubstr(host));

  ASSERT_TRUE((*writer)->Scalar("loss", 0.75f, 1).ok());
  ASSERT_TRUE((*writer)->Scalar("accuracy", 0.0f, 1).ok());  // a zero still carries a value
  ASSERT_TRUE((*writer)->Scalar("loss", 0.5f, 2).ok());
  // Flushed per scalar: a reader (a live TensorBoard) sees them before Close.
  std::vector<proto::Event> live = ReadEvents(path);
  ASSERT_EQ(live.size(), 4u);
  ASSERT_TRUE((*writer)->Close().ok());

  std::vector<proto::Event> events = ReadEvents(path);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_GT(events[0].wall_time(), 1.6e9);  // seconds since 1970, not ms or 0
  struct Point {
    std::string tag;
    float value;
    int64_t step;
  };
  const std::vector<Point> expected = {
      {"loss", 0.75f, 1}, {"accuracy", 0.0f, 1}, {"loss", 0.5f, 2}};
  for (size_t i = 0; i < expected.size(); ++i) {
    const proto::Event& e = events[i + 1];
    ASSERT_TRUE(e.has_summary()) << i;
    ASSERT_EQ(e.summary().value_size(), 1);
    const proto::Summary::Value& v = e.summary().value(0);
    EXPECT_EQ(v.tag(), expected[i].tag);
    EXPECT_TRUE(v.has_simple_value());
    EXPECT_EQ(v.simple_value(), expected[i].value);
    EXPECT_EQ(e.step(), expected[i].step);
  }
  std::filesystem::remove_all(dir);
}

TEST(SummaryWriterTest, ZeroValueIsOnTheWire) {
  // TensorBoard reads simple_value only when present: proto3 would drop a plain 0.
  proto::Summary::Value v;
  v.set_tag("x");
  v.set_simple_value(0.0f);
  const std::string bytes = v.SerializeAsString();
  EXPECT_NE(bytes.find('\x15'), std::string::npos);  // field 2, wire type 5 (fixed32)
}

TEST(SummaryWriterTest, UnbufferedUntilFlushWhenAsked) {
  const std::string dir = SummaryDir("buffered");
  auto writer = SummaryWriter::Create(dir, {.flush_each = false});
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Scalar("a", 1.0f, 0).ok());
  EXPECT_EQ(ReadEvents((*writer)->path()).size(), 1u);  // the version record only
  ASSERT_TRUE((*writer)->Flush().ok());
  EXPECT_EQ(ReadEvents((*writer)->path()).size(), 2u);
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_FALSE((*writer)->Scalar("a", 1.0f, 1).ok());  // closed
  std::filesystem::remove_all(dir);
}

TEST(SummaryWriterTest, UnwritableDirectoryIsAnError) {
  auto writer = SummaryWriter::Create("/proc/sluice-no-such-dir/run");
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(std::string(writer.status().message()), HasSubstr("/proc/sluice-no-such-dir"));
}

}  // namespace
}  // namespace sluice::train::callbacks
