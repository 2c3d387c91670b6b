#include "io/tfrecord_writer.h"

#include <zlib.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/tfrecord_reader.h"
#include "tests/file_util.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

using ::sluice::testing::ReadFile;
using ::sluice::testing::ScopedTempDir;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

// Decompresses a whole file with zlib's inflate: a decoder independent of ours.
std::string InflateFile(const std::string& path, Compression c) {
  const std::string compressed = ReadFile(path);
  z_stream s{};
  EXPECT_EQ(inflateInit2(&s, ZlibWindowBits(c)), Z_OK);
  std::string out;
  std::string buf(1 << 16, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  s.avail_in = static_cast<uInt>(compressed.size());
  int rc;
  do {
    s.next_out = reinterpret_cast<Bytef*>(buf.data());
    s.avail_out = static_cast<uInt>(buf.size());
    rc = inflate(&s, Z_NO_FLUSH);
    out.append(buf.data(), buf.size() - s.avail_out);
  } while (rc == Z_OK);
  EXPECT_EQ(rc, Z_STREAM_END);
  EXPECT_EQ(s.avail_in, 0u);
  inflateEnd(&s);
  return out;
}

std::vector<std::string> ReadRecords(const std::string& path, TFRecordReaderOptions options) {
  std::vector<std::string> records;
  auto reader = TFRecordReader::Open(path, options);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return records;
  std::string record;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->ReadRecord(&record);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    records.push_back(record);
  }
  return records;
}

// Random records (fixed seed): mostly small, some empty, some past the reader's buffer, and one
// of 10 MB.
std::vector<std::string> RandomRecords() {
  std::mt19937_64 rng(2024);
  std::vector<std::string> records;
  for (int i = 0; i < 300; ++i) {
    size_t n;
    switch (i % 10) {
      case 0:
        n = 0;
        break;
      case 1:
        n = rng() % 300'000;
        break;
      default:
        n = rng() % 3000;
    }
    if (i == 150) n = 10 << 20;
    // Random words and bytes: compressible, not trivially so (and quick for deflate).
    static const char* const kWords[] = {"alpha ", "beta ",     "gamma ",
                                         "delta ", "\x01\xff ", "zeta "};
    std::string r;
    r.reserve(n + 8);
    while (r.size() < n) {
      if (rng() % 4 == 0) r.push_back(static_cast<char>(rng()));
      r += kWords[rng() % 6];
    }
    r.resize(n);
    records.push_back(std::move(r));
  }
  return records;
}

class WriterRoundTripTest : public ::testing::TestWithParam<Compression> {};

TEST_P(WriterRoundTripTest, RandomRecordsReadBackIdentically) {
  const Compression c = GetParam();
  ScopedTempDir dir;
  const std::string path =
      dir.File(std::string("data.tfrecord") + (c == Compression::kGzip   ? ".gz"
                                               : c == Compression::kZlib ? ".zlib"
                                                                         : ""));
  const std::vector<std::string> records = RandomRecords();
  {
    auto writer = TFRecordWriter::Open(path, {.compression = c});
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (const std::string& r : records) ASSERT_TRUE((*writer)->Write(r).ok());
    EXPECT_EQ((*writer)->records_written(), static_cast<int64_t>(records.size()));
    ASSERT_TRUE((*writer)->Close().ok());
  }
  EXPECT_EQ(dir.List(), std::vector<std::string>{fs::path(path).filename()});
  ASSERT_EQ(GuessCompression(path), c);
  for (size_t buffer_size : {size_t{4096}, size_t{256} << 10}) {
    const std::vector<std::string> back =
        ReadRecords(path, {.compression = c, .buffer_size = buffer_size});
    ASSERT_EQ(back.size(), records.size());
    for (size_t i = 0; i < records.size(); ++i) ASSERT_EQ(back[i], records[i]) << "record " << i;
  }
  if (c != Compression::kNone) {
    // The whole stream is compressed, as TensorFlow writes it: inflating the file gives the
    // uncompressed framing.
    const std::string plain_path = dir.File("plain.tfrecord");
    auto plain = TFRecordWriter::Open(plain_path);
    for (const std::string& r : records) ASSERT_TRUE((*plain)->Write(r).ok());
    ASSERT_TRUE((*plain)->Close().ok());
    EXPECT_TRUE(InflateFile(path, c) == ReadFile(plain_path));  // (EXPECT_EQ would print 13 MB)
    EXPECT_LT(fs::file_size(path), fs::file_size(plain_path) / 2);
  }
}

// Parked every 37 records (a compressed stream ended and another begun each time): the file
// reads back as one stream of the same records.
TEST_P(WriterRoundTripTest, ParkedWritesReadBackIdentically) {
  const Compression c = GetParam();
  ScopedTempDir dir;
  const std::string path = dir.File("data.tfrecord");
  const std::vector<std::string> records = RandomRecords();
  {
    auto writer = TFRecordWriter::Open(path, {.compression = c, .sync = false});
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE((*writer)->Park().ok());  // before any record too
    for (size_t i = 0; i < records.size(); ++i) {
      ASSERT_TRUE((*writer)->Write(records[i]).ok());
      if (i % 37 == 36) {
        ASSERT_TRUE((*writer)->Park().ok());
      }
    }
    ASSERT_TRUE((*writer)->Park().ok());
    ASSERT_TRUE((*writer)->Close().ok());
    EXPECT_EQ((*writer)->Park().code(), absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(dir.List(), std::vector<std::string>{"data.tfrecord"});
  for (size_t buffer_size : {size_t{4096}, size_t{256} << 10}) {
    const std::vector<std::string> back =
        ReadRecords(path, {.compression = c, .buffer_size = buffer_size});
    ASSERT_EQ(back.size(), records.size());
    for (size_t i = 0; i < records.size(); ++i) ASSERT_EQ(back[i], records[i]) << "record " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllCompressions, WriterRoundTripTest,
                         ::testing::Values(Compression::kNone, Compression::kGzip,
                                           Compression::kZlib),
                         [](const auto& info) { return std::string(CompressionName(info.param)); });

TEST(TFRecordWriterTest, ReproducesTheGoldenFileByteForByte) {
  ScopedTempDir dir;
  const std::string golden = std::string(SLUICE_TEST_DATA) + "/small100.tfrecord";
  const std::string path = dir.File("copy.tfrecord");
  auto writer = TFRecordWriter::Open(path);
  ASSERT_TRUE(writer.ok());
  for (const std::string& r : ReadRecords(golden, {})) ASSERT_TRUE((*writer)->Write(r).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_TRUE(ReadFile(path) == ReadFile(golden));
}

TEST(TFRecordWriterTest, NoFileAtThePathBeforeClose) {
  ScopedTempDir dir;
  const std::string path = dir.File("out.tfrecord");
  auto writer = TFRecordWriter::Open(path);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Write("abc").ok());
  ASSERT_TRUE((*writer)->Write(std::string(1 << 20, 'x')).ok());  // Past the write buffer.
  EXPECT_FALSE(fs::exists(path));
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(dir.List(), std::vector<std::string>{"out.tfrecord"});
  EXPECT_EQ(ReadRecords(path, {}).size(), 2u);
}

TEST(TFRecordWriterTest, AnUnclosedWriterLeavesNothingBehind) {
  for (const auto c : {Compression::kNone, Compression::kGzip}) {
    ScopedTempDir dir;
    const std::string path = dir.File("out.tfrecord");
    {
      auto writer = TFRecordWriter::Open(path, {.compression = c});
      ASSERT_TRUE(writer.ok());
      ASSERT_TRUE((*writer)->Write(std::string(3 << 20, 'x')).ok());
      EXPECT_EQ(dir.List().size(), 1u);  // The temporary file.
    }
    EXPECT_EQ(dir.List(), std::vector<std::string>{});
  }
}

TEST(TFRecordWriterTest, AnUnclosedWriterKeepsTheOldFile) {
  ScopedTempDir dir;
  const std::string path = dir.File("out.tfrecord");
  {
    auto writer = TFRecordWriter::Open(path);
    ASSERT_TRUE((*writer)->Write("old").ok());
    ASSERT_TRUE((*writer)->Close().ok());
  }
  {
    auto writer = TFRecordWriter::Open(path);
    ASSERT_TRUE((*writer)->Write("new").ok());
  }
  EXPECT_EQ(ReadRecords(path, {}), std::vector<std::string>{"old"});
  {
    auto writer = TFRecordWriter::Open(path);
    ASSERT_TRUE((*writer)->Write("new").ok());
    ASSERT_TRUE((*writer)->Close().ok());
  }
  EXPECT_EQ(ReadRecords(path, {}), std::vector<std::string>{"new"});
}

TEST(TFRecordWriterTest, WriteAfterCloseAndCloseTwiceFail) {
  ScopedTempDir dir;
  auto writer = TFRecordWriter::Open(dir.File("x.tfrecord"));
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ((*writer)->Write("a").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*writer)->Close().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*writer)->records_written(), 0);
  EXPECT_TRUE(ReadRecords(dir.File("x.tfrecord"), {}).empty());
}

TEST(TFRecordWriterTest, OpenErrors) {
  const std::string path = "/nonexistent-dir/x.tfrecord";
  auto missing = TFRecordWriter::Open(path);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(path));
  ScopedTempDir dir;
  auto bad_level = TFRecordWriter::Open(
      dir.File("x.gz"), {.compression = Compression::kGzip, .compression_level = 11});
  EXPECT_EQ(bad_level.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dir.List(), std::vector<std::string>{});
}

TEST(TFRecordWriterTest, CompressionLevelsAllRoundTrip) {
  ScopedTempDir dir;
  const std::string record(100'000, 'z');
  uintmax_t stored_size = 0, best_size = 0;
  for (int level : {0, 1, 9}) {
    const std::string path = dir.File("l" + std::to_string(level) + ".gz");
    auto writer = TFRecordWriter::Open(
        path, {.compression = Compression::kGzip, .compression_level = level, .sync = false});
    ASSERT_TRUE((*writer)->Write(record).ok());
    ASSERT_TRUE((*writer)->Close().ok());
    EXPECT_EQ(ReadRecords(path, {.compression = Compression::kGzip}),
              std::vector<std::string>{record});
    if (level == 0) stored_size = fs::file_size(path);
    if (level == 9) best_size = fs::file_size(path);
  }
  EXPECT_GT(stored_size, record.size());  // Level 0 stores.
  EXPECT_LT(best_size, record.size() / 100);
}

}  // namespace
}  // namespace sluice
