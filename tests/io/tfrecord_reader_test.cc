#include "io/tfrecord_reader.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/proto/example.pb.h"
#include "io/tfrecord_format.h"
#include "tests/file_util.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

using ::sluice::testing::ReadFile;
using ::sluice::testing::ScopedTempDir;
using ::sluice::testing::WriteFile;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kData = SLUICE_TEST_DATA;
const std::string kSmall = kData + "/small100.tfrecord";
const std::string kSmallGz = kData + "/small100.tfrecord.gz";
const std::string kSmallZlib = kData + "/small100.tfrecord.zlib";
const std::string kCorrupt = kData + "/small100.corrupt-record41.tfrecord";
const std::string kTruncated = kData + "/small100.truncated.tfrecord";
const std::string kImages = kData + "/images3.tfrecord";

struct ReadResult {
  std::vector<std::string> records;
  std::vector<uint64_t> offsets;  // offset() before each record
  absl::Status status;            // OK when the file ended cleanly
};

ReadResult ReadAll(const std::string& path, TFRecordReaderOptions options = {}) {
  ReadResult result;
  auto reader = TFRecordReader::Open(path, options);
  if (!reader.ok()) {
    result.status = reader.status();
    return result;
  }
  std::string record;
  while (true) {
    const uint64_t offset = (*reader)->offset();
    absl::StatusOr<bool> more = (*reader)->ReadRecord(&record);
    if (!more.ok()) {
      result.status = more.status();
      break;
    }
    if (!*more) break;
    result.records.push_back(record);
    result.offsets.push_back(offset);
  }
  return result;
}

// Checks that `record` is small100's record `i`: exactly the three features with their values.
void ExpectSmallRecord(const std::string& record, int i) {
  proto::Example example;
  ASSERT_TRUE(example.ParseFromString(record)) << "record " << i;
  const auto& features = example.features().feature();
  ASSERT_EQ(features.size(), 3u) << "record " << i;

  ASSERT_TRUE(features.contains("id"));
  const proto::Feature& id = features.at("id");
  ASSERT_TRUE(id.has_int64_list());
  ASSERT_EQ(id.int64_list().value_size(), 1);
  EXPECT_EQ(id.int64_list().value(0), i);

  ASSERT_TRUE(features.contains("vec"));
  const proto::Feature& vec = features.at("vec");
  ASSERT_TRUE(vec.has_float_list());
  ASSERT_EQ(vec.float_list().value_size(), 3);
  EXPECT_EQ(vec.float_list().value(0), static_cast<float>(i * 0.5)) << "record " << i;
  EXPECT_EQ(vec.float_list().value(1), static_cast<float>(-i)) << "record " << i;
  EXPECT_EQ(vec.float_list().value(2), static_cast<float>(1.0 / (i + 1))) << "record " << i;

  ASSERT_TRUE(features.contains("name"));
  const proto::Feature& name = features.at("name");
  ASSERT_TRUE(name.has_bytes_list());
  ASSERT_EQ(name.bytes_list().value_size(), 1);
  EXPECT_EQ(name.bytes_list().value(0), absl::StrCat("item-", i));
}

int64_t IdOf(const std::string& record) {
  proto::Example example;
  EXPECT_TRUE(example.ParseFromString(record));
  return example.features().feature().at("id").int64_list().value(0);
}

TEST(TFRecordReaderTest, ReadsEveryValueOfSmall100) {
  auto reader = TFRecordReader::Open(kSmall);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::string record;
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ((*reader)->records_read(), i);
    absl::StatusOr<bool> more = (*reader)->ReadRecord(&record);
    ASSERT_TRUE(more.ok()) << more.status();
    ASSERT_TRUE(*more) << "ended after " << i << " records";
    ExpectSmallRecord(record, i);
  }
  absl::StatusOr<bool> more = (*reader)->ReadRecord(&record);
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_FALSE(*more);
  EXPECT_FALSE(*(*reader)->ReadRecord(&record));  // Stays at the end.
  EXPECT_EQ((*reader)->records_read(), 100);
  EXPECT_EQ((*reader)->records_skipped(), 0);
  EXPECT_EQ((*reader)->offset(), std::filesystem::file_size(kSmall));
  EXPECT_EQ((*reader)->path(), kSmall);
}

TEST(TFRecordReaderTest, OffsetsFollowTheFraming) {
  const ReadResult r = ReadAll(kSmall);
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.records.size(), 100u);
  uint64_t expected = 0;
  for (size_t i = 0; i < r.records.size(); ++i) {
    EXPECT_EQ(r.offsets[i], expected) << i;
    expected += 16 + r.records[i].size();
  }
  EXPECT_EQ(expected, std::filesystem::file_size(kSmall));
}

TEST(TFRecordReaderTest, GzipAndZlibGiveIdenticalRecords) {
  const ReadResult plain = ReadAll(kSmall);
  ASSERT_TRUE(plain.status.ok());
  for (const auto& [path, compression] :
       {std::pair{kSmallGz, Compression::kGzip}, std::pair{kSmallZlib, Compression::kZlib}}) {
    SCOPED_TRACE(path);
    const ReadResult explicit_c = ReadAll(path, {.compression = compression});
    ASSERT_TRUE(explicit_c.status.ok()) << explicit_c.status;
    EXPECT_EQ(explicit_c.records, plain.records);
    EXPECT_EQ(explicit_c.offsets, plain.offsets);  // Offsets in the uncompressed stream.
    ASSERT_EQ(GuessCompression(path), compression);
    const ReadResult guessed = ReadAll(path, {.compression = GuessCompression(path)});
    ASSERT_TRUE(guessed.status.ok()) << guessed.status;
    EXPECT_EQ(guessed.records, plain.records);
    // A tiny buffer exercises the refill paths of the inflating stream.
    const ReadResult tiny = ReadAll(path, {.compression = compression, .buffer_size = 1});
    ASSERT_TRUE(tiny.status.ok()) << tiny.status;
    EXPECT_EQ(tiny.records, plain.records);
  }
}

TEST(TFRecordReaderTest, CompressedFileReadAsUncompressedHintsAtGzip) {
  const ReadResult r = ReadAll(kSmallGz, {.compression = Compression::kNone});
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status.message(), HasSubstr("record 0 at offset 0: length CRC mismatch"));
  EXPECT_THAT(r.status.message(), HasSubstr("GZIP"));
}

// Read with another compression, a compressed file fails at its start: the error says what its
// first bytes look like.
TEST(TFRecordReaderTest, AFileReadWithTheWrongCompressionSaysWhatItStartsLike) {
  const ReadResult gzip_as_zlib = ReadAll(kSmallGz, {.compression = Compression::kZlib});
  EXPECT_EQ(gzip_as_zlib.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(gzip_as_zlib.status.message(),
              HasSubstr("corrupt zlib stream at compressed offset 2 (zlib: incorrect header "
                        "check) (the file starts like a GZIP stream: read it as gzip?)"));
  EXPECT_THAT(ReadAll(kSmallZlib, {.compression = Compression::kGzip}).status.message(),
              HasSubstr("(the file starts like a ZLIB stream: read it as zlib?)"));
  EXPECT_THAT(ReadAll(kSmall, {.compression = Compression::kGzip}).status.message(),
              HasSubstr("(the file starts like neither a GZIP nor a ZLIB stream: is it "
                        "uncompressed?)"));
}

TEST(TFRecordReaderTest, CorruptRecordFailsAtRecord41WithFileAndOffset) {
  const ReadResult good = ReadAll(kSmall);
  auto reader = TFRecordReader::Open(kCorrupt);
  ASSERT_TRUE(reader.ok());
  std::string record;
  for (int i = 0; i < 41; ++i) {
    ASSERT_TRUE(*(*reader)->ReadRecord(&record));
    ExpectSmallRecord(record, i);
  }
  absl::StatusOr<bool> bad = (*reader)->ReadRecord(&record);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad.status().message(), HasSubstr(kCorrupt));
  EXPECT_THAT(bad.status().message(), HasSubstr("record 41 "));
  EXPECT_THAT(bad.status().message(), HasSubstr(absl::StrCat("at offset ", good.offsets[41], ":")));
  EXPECT_THAT(bad.status().message(), HasSubstr("data CRC mismatch (stored 0x"));
  // Sticky: the same error again, and the position stays at the failed record.
  absl::StatusOr<bool> again = (*reader)->ReadRecord(&record);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status(), bad.status());
  EXPECT_EQ((*reader)->records_read(), 41);
  EXPECT_EQ((*reader)->offset(), good.offsets[41]);
}

TEST(TFRecordReaderTest, CorruptRecordIsSkippedAndCounted) {
  const ReadResult good = ReadAll(kSmall);
  std::vector<absl::Status> reported;
  auto reader = TFRecordReader::Open(
      kCorrupt, {.skip_corrupt = true,
                 .on_skipped = [&](const absl::Status& why) { reported.push_back(why); }});
  ASSERT_TRUE(reader.ok());
  std::string record;
  std::vector<int64_t> ids;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->ReadRecord(&record);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    ids.push_back(IdOf(record));
  }
  ASSERT_EQ(ids.size(), 99u);
  for (int i = 0; i < 99; ++i) EXPECT_EQ(ids[i], i < 41 ? i : i + 1);
  EXPECT_EQ((*reader)->records_skipped(), 1);
  EXPECT_EQ((*reader)->records_read(), 100);
  // The error the record would have been, for the caller to name it.
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0].code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(reported[0].message(),
              HasSubstr(absl::StrCat(kCorrupt, ": record 41 at offset ", good.offsets[41],
                                     ": data CRC mismatch (stored 0x")));
}

TEST(TFRecordReaderTest, WithoutCrcVerificationTheCorruptRecordIsReturned) {
  const ReadResult good = ReadAll(kSmall);
  const ReadResult r = ReadAll(kCorrupt, {.verify_crc = false});
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.records.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    if (i == 41) {
      EXPECT_NE(r.records[i], good.records[i]);  // The flipped bit.
    } else {
      EXPECT_EQ(r.records[i], good.records[i]);
    }
  }
}

TEST(TFRecordReaderTest, TruncatedFileFailsAtRecord99) {
  const ReadResult good = ReadAll(kSmall);
  const ReadResult r = ReadAll(kTruncated);
  EXPECT_EQ(r.records.size(), 99u);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status.message(), HasSubstr(kTruncated));
  EXPECT_THAT(r.status.message(),
              HasSubstr(absl::StrCat("record 99 at offset ", good.offsets[99])));
  // The last 7 bytes are gone: the 4 CRC bytes and 3 bytes of data.
  EXPECT_THAT(
      r.status.message(),
      HasSubstr(absl::StrCat("truncated record (header says ", good.records[99].size(),
                             " bytes, file ends after ", good.records[99].size() - 3, ")")));
  for (int i = 0; i < 99; ++i) ExpectSmallRecord(r.records[i], i);
}

TEST(TFRecordReaderTest, TruncatedRecordIsSkippedAndEndsTheStream) {
  std::vector<std::string> reported;
  auto reader = TFRecordReader::Open(
      kTruncated, {.skip_corrupt = true, .on_skipped = [&](const absl::Status& why) {
                     reported.emplace_back(why.message());
                   }});
  ASSERT_TRUE(reader.ok());
  std::string record;
  int n = 0;
  while (*(*reader)->ReadRecord(&record)) ExpectSmallRecord(record, n++);
  EXPECT_EQ(n, 99);
  EXPECT_EQ((*reader)->records_skipped(), 1);
  EXPECT_EQ((*reader)->records_read(), 100);
  EXPECT_EQ((*reader)->offset(), std::filesystem::file_size(kTruncated));
  EXPECT_THAT(reported, ElementsAre(HasSubstr(": record 99 at offset ")));
  EXPECT_THAT(reported[0], HasSubstr("truncated record"));
}

TEST(TFRecordReaderTest, TruncatedHeaderIsReported) {
  ScopedTempDir dir;
  const std::string data = ReadFile(kSmall);
  const ReadResult good = ReadAll(kSmall);
  const std::string path = dir.File("header.tfrecord");
  WriteFile(path, data.substr(0, good.offsets[5] + 5));  // 5 bytes of record 5's header.
  const ReadResult r = ReadAll(path);
  EXPECT_EQ(r.records.size(), 5u);
  EXPECT_THAT(r.status.message(),
              HasSubstr("record 5 at offset " + std::to_string(good.offsets[5]) +
                        ": truncated record header (12 bytes expected, file ends after 5)"));
  const ReadResult skipped = ReadAll(path, {.skip_corrupt = true});
  EXPECT_TRUE(skipped.status.ok());
  EXPECT_EQ(skipped.records.size(), 5u);
}

// A file read to its end with skip_corrupt: the ids of small100-style records read, what
// on_skipped reported, and the reader's counts.
struct SkippingRead {
  std::vector<int64_t> ids;
  std::vector<std::string> reported;
  int64_t skipped = 0, read = 0;
};
SkippingRead ReadIdsSkipping(const std::string& path) {
  SkippingRead out;
  auto reader =
      TFRecordReader::Open(path, {.skip_corrupt = true, .on_skipped = [&](const absl::Status& why) {
                                    out.reported.emplace_back(why.message());
                                  }});
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return out;
  std::string record;
  while (*(*reader)->ReadRecord(&record)) out.ids.push_back(IdOf(record));
  out.skipped = (*reader)->records_skipped();
  out.read = (*reader)->records_read();
  return out;
}

TEST(TFRecordReaderTest, CorruptLengthResynchronisesOnTheNextValidHeader) {
  ScopedTempDir dir;
  const ReadResult good = ReadAll(kSmall);
  std::string data = ReadFile(kSmall);
  data[good.offsets[10] + 2] ^= 0x10;  // A bit of record 10's length.
  const std::string path = dir.File("length.tfrecord");
  WriteFile(path, data);

  const ReadResult strict = ReadAll(path);
  EXPECT_EQ(strict.records.size(), 10u);
  EXPECT_EQ(strict.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(strict.status.message(),
              HasSubstr(absl::StrCat(path, ": record 10 at offset ", good.offsets[10],
                                     ": length CRC mismatch (stored 0x")));

  const SkippingRead read = ReadIdsSkipping(path);
  ASSERT_EQ(read.ids.size(), 99u);
  for (int i = 0; i < 99; ++i) EXPECT_EQ(read.ids[i], i < 10 ? i : i + 1);
  EXPECT_EQ(read.skipped, 1);
  EXPECT_EQ(read.read, 100);
  // Record 10's bytes, from its header to record 11's.
  EXPECT_THAT(
      read.reported,
      ElementsAre(AllOf(HasSubstr(absl::StrCat(": record 10 at offset ", good.offsets[10],
                                               ": length CRC mismatch (stored 0x")),
                        HasSubstr(absl::StrCat("; ", good.offsets[11] - good.offsets[10],
                                               " bytes to the next valid header passed over")))));
}

TEST(TFRecordReaderTest, CorruptTrailingHeaderIsSkippedToTheEnd) {
  ScopedTempDir dir;
  const ReadResult good = ReadAll(kSmall);
  std::string data = ReadFile(kSmall);
  data[good.offsets[99] + 9] ^= 0x01;  // Record 99's length CRC itself.
  const std::string path = dir.File("last.tfrecord");
  WriteFile(path, data);
  std::vector<std::string> reported;
  const ReadResult r = ReadAll(
      path, {.skip_corrupt = true,
             .on_skipped = [&](const absl::Status& why) { reported.emplace_back(why.message()); }});
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.records.size(), 99u);
  // No valid header after it: the rest of the file.
  EXPECT_THAT(reported, ElementsAre(HasSubstr(absl::StrCat("; ", data.size() - good.offsets[99],
                                                           " bytes to the end passed over"))));
}

TEST(TFRecordReaderTest, ReadsImages3) {
  const std::vector<size_t> jpeg_sizes = {57517, 58200, 68135};
  const std::vector<int64_t> labels = {1, 4, 7};
  const ReadResult r = ReadAll(kImages);
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.records.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    proto::Example example;
    ASSERT_TRUE(example.ParseFromString(r.records[i]));
    const auto& f = example.features().feature();
    const std::string& jpeg = f.at("image/encoded").bytes_list().value(0);
    EXPECT_EQ(jpeg.size(), jpeg_sizes[i]);
    EXPECT_EQ(jpeg.substr(0, 2), "\xff\xd8");  // JPEG start and end markers.
    EXPECT_EQ(jpeg.substr(jpeg.size() - 2), "\xff\xd9");
    EXPECT_EQ(f.at("image/class/label").int64_list().value(0), labels[i]);
    EXPECT_EQ(f.at("image/format").bytes_list().value(0), "jpeg");
    ASSERT_EQ(f.at("image/object/bbox/xmin").float_list().value_size(), 2);
    EXPECT_EQ(f.at("image/object/bbox/xmin").float_list().value(0), 0.25f);
    EXPECT_EQ(f.at("image/object/bbox/xmin").float_list().value(1), 0.5f);
  }
  // Records larger than the buffer take the direct-read path: same bytes.
  const ReadResult small_buffer = ReadAll(kImages, {.buffer_size = 4096});
  ASSERT_TRUE(small_buffer.status.ok());
  EXPECT_EQ(small_buffer.records, r.records);
}

TEST(TFRecordReaderTest, CorruptLargeRecordIsDetectedOnTheDirectReadPath) {
  ScopedTempDir dir;
  const ReadResult good = ReadAll(kImages);
  std::string data = ReadFile(kImages);
  data[good.offsets[1] + 12 + 30'000] ^= 0x40;  // Inside record 1's JPEG.
  const std::string path = dir.File("images.tfrecord");
  WriteFile(path, data);
  for (size_t buffer_size : {size_t{4096}, size_t{256} << 10}) {
    const ReadResult strict = ReadAll(path, {.buffer_size = buffer_size});
    EXPECT_EQ(strict.records.size(), 1u);
    EXPECT_THAT(strict.status.message(),
                HasSubstr(absl::StrCat(path, ": record 1 at offset ", good.offsets[1],
                                       ": data CRC mismatch")));
    const ReadResult skipped = ReadAll(path, {.skip_corrupt = true, .buffer_size = buffer_size});
    ASSERT_TRUE(skipped.status.ok()) << skipped.status;
    ASSERT_EQ(skipped.records.size(), 2u);
    EXPECT_EQ(skipped.records[0], good.records[0]);
    EXPECT_EQ(skipped.records[1], good.records[2]);
  }
}

TEST(TFRecordReaderTest, RecordOverMaxRecordBytesIsResourceExhaustedNamingTheLimit) {
  const ReadResult good = ReadAll(kImages);
  ASSERT_EQ(good.records.size(), 3u);
  const ReadResult limited = ReadAll(kImages, {.max_record_bytes = 60'000});
  // Records 0 and 1 fit (about 58 KB each); record 2 (68 KB) stops the read.
  size_t fit = 0;
  while (fit < 3 && good.records[fit].size() <= 60'000) ++fit;
  ASSERT_EQ(fit, 2u);
  EXPECT_EQ(limited.records.size(), fit);
  EXPECT_EQ(limited.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(limited.status.message(),
              HasSubstr(absl::StrCat(kImages, ": record ", fit, " at offset ", good.offsets[fit],
                                     ": a record of ", good.records[fit].size(),
                                     " bytes exceeds max_record_bytes (60000)")));
}

TEST(TFRecordReaderTest, LengthClaimingATerabyteFailsWithoutAllocatingIt) {
  ScopedTempDir dir;
  // A header with a valid length CRC claiming 2^40 bytes, then a few bytes.
  char header[12];
  tfrecord::EncodeHeader(header, uint64_t{1} << 40);
  const std::string path = dir.File("huge.tfrecord");
  WriteFile(path, std::string(header, 12) + "tiny");
  // Past the file's end: a truncation, over the limit or not (the limit was the error, and told
  // a user to raise it for a 16-byte file).
  const ReadResult r = ReadAll(path);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status.message(),
              HasSubstr("record 0 at offset 0: truncated record (header says 1099511627776 "
                        "bytes, file ends after 4)"));
  const ReadResult unlimited = ReadAll(path, {.max_record_bytes = uint64_t{1} << 41});
  EXPECT_EQ(unlimited.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(unlimited.status.message(), HasSubstr("truncated"));
}

// A header whose CRC holds but whose length runs past the file's end is a corrupt header:
// skip_corrupt passes over it to the next valid one, as over a length whose CRC fails.
TEST(TFRecordReaderTest, ALengthPastTheFilesEndIsSkippedToTheNextValidHeader) {
  ScopedTempDir dir;
  char header[12];
  tfrecord::EncodeHeader(header, uint64_t{1} << 40);
  const std::string path = dir.File("huge_then_good.tfrecord");
  WriteFile(path, std::string(header, 12) + std::string(100, '\0') + ReadFile(kSmall));
  const SkippingRead read = ReadIdsSkipping(path);
  ASSERT_EQ(read.ids.size(), 100u);
  EXPECT_EQ(read.ids.front(), 0);
  EXPECT_EQ(read.ids.back(), 99);
  EXPECT_EQ(read.skipped, 1);
  EXPECT_THAT(read.reported, ElementsAre(AllOf(HasSubstr("record 0 at offset 0: truncated record "
                                                         "(header says 1099511627776 bytes"),
                                               HasSubstr("; 112 bytes to the next valid header "
                                                         "passed over"))));
}

TEST(TFRecordReaderTest, SeekAfterDirectReadsOfLargeRecords) {
  const ReadResult good = ReadAll(kImages);
  auto reader = TFRecordReader::Open(kImages, {.buffer_size = 4096});
  ASSERT_TRUE(reader.ok());
  std::string record;
  for (int target : {2, 0, 1, 1, 2, 0}) {
    ASSERT_TRUE((*reader)->Seek(good.offsets[target], target).ok());
    ASSERT_TRUE(*(*reader)->ReadRecord(&record));
    EXPECT_EQ(record, good.records[target]) << target;
    EXPECT_EQ((*reader)->offset(), good.offsets[target] + 16 + good.records[target].size());
  }
}

TEST(TFRecordReaderTest, ReusesTheRecordsCapacity) {
  auto reader = TFRecordReader::Open(kSmall);
  ASSERT_TRUE(reader.ok());
  std::string record;
  record.reserve(1 << 16);
  const char* storage = record.data();
  while (*(*reader)->ReadRecord(&record)) ASSERT_EQ(record.data(), storage);
  EXPECT_EQ((*reader)->records_read(), 100);
}

TEST(TFRecordReaderTest, MissingFileIsNotFoundNamingThePath) {
  const std::string path = kData + "/no-such-file.tfrecord";
  auto reader = TFRecordReader::Open(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(reader.status().message(), HasSubstr(path));
  EXPECT_EQ(TFRecordReader::Open(path, {.compression = Compression::kGzip}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(TFRecordReaderTest, EmptyFileHasNoRecords) {
  ScopedTempDir dir;
  for (const auto c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    const std::string path = dir.File("empty");
    WriteFile(path, "");
    const ReadResult r = ReadAll(path, {.compression = c});
    EXPECT_TRUE(r.status.ok()) << r.status;
    EXPECT_TRUE(r.records.empty());
  }
}

TEST(TFRecordReaderTest, SeekRepositions) {
  const ReadResult good = ReadAll(kSmall);
  // A small buffer makes the far seeks leave the buffered window.
  for (size_t buffer_size : {size_t{4096}, size_t{256} << 10}) {
    auto reader = TFRecordReader::Open(kSmall, {.buffer_size = buffer_size});
    ASSERT_TRUE(reader.ok());
    std::string record;
    for (int target : {57, 3, 99, 0, 58, 60}) {
      ASSERT_TRUE((*reader)->Seek(good.offsets[target], target).ok());
      EXPECT_EQ((*reader)->offset(), good.offsets[target]);
      EXPECT_EQ((*reader)->records_read(), target);
      ASSERT_TRUE(*(*reader)->ReadRecord(&record));
      ExpectSmallRecord(record, target);
      EXPECT_EQ((*reader)->records_read(), target + 1);
    }
    // To the end: a clean end of the stream.
    ASSERT_TRUE((*reader)->Seek(std::filesystem::file_size(kSmall), 100).ok());
    EXPECT_FALSE(*(*reader)->ReadRecord(&record));
    ASSERT_TRUE((*reader)->Seek(good.offsets[98], 98).ok());
    int n = 0;
    while (*(*reader)->ReadRecord(&record)) ++n;
    EXPECT_EQ(n, 2);
  }
}

TEST(TFRecordReaderTest, SeekToAWrongOffsetFailsTheNextRead) {
  const ReadResult good = ReadAll(kSmall);
  auto reader = TFRecordReader::Open(kSmall);
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE((*reader)->Seek(good.offsets[7] + 1, 7).ok());
  std::string record;
  absl::StatusOr<bool> r = (*reader)->ReadRecord(&record);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("record 7 at offset"));
}

TEST(TFRecordReaderTest, SeekPastACorruptRecordClearsTheError) {
  const ReadResult good = ReadAll(kSmall);
  auto reader = TFRecordReader::Open(kCorrupt);
  ASSERT_TRUE(reader.ok());
  std::string record;
  while (true) {
    absl::StatusOr<bool> r = (*reader)->ReadRecord(&record);
    if (!r.ok()) break;
    ASSERT_TRUE(*r);
  }
  EXPECT_EQ((*reader)->records_read(), 41);
  ASSERT_TRUE((*reader)->Seek(good.offsets[42], 42).ok());
  int next = 42;
  while (true) {
    absl::StatusOr<bool> r = (*reader)->ReadRecord(&record);
    ASSERT_TRUE(r.ok()) << r.status();
    if (!*r) break;
    ExpectSmallRecord(record, next++);
  }
  EXPECT_EQ(next, 100);
}

TEST(TFRecordReaderTest, SeekInACompressedFileIsAClearError) {
  auto reader = TFRecordReader::Open(kSmallGz, {.compression = Compression::kGzip});
  ASSERT_TRUE(reader.ok());
  absl::Status s = (*reader)->Seek(0, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr(kSmallGz));
  EXPECT_THAT(s.message(), HasSubstr("gzip"));
  EXPECT_EQ((*reader)->Seek(0, -1).code(), absl::StatusCode::kFailedPrecondition);
  auto plain = TFRecordReader::Open(kSmall);
  EXPECT_EQ((*plain)->Seek(0, -1).code(), absl::StatusCode::kInvalidArgument);
}

TEST(TFRecordReaderTest, CorruptGzipStreamIsAnErrorNamingTheFile) {
  ScopedTempDir dir;
  std::string data = ReadFile(kSmallGz);
  for (size_t i = data.size() / 3; i < data.size() / 3 + 16; ++i) data[i] ^= 0x5a;
  const std::string path = dir.File("corrupt.tfrecord.gz");
  WriteFile(path, data);
  for (bool skip : {false, true}) {
    const ReadResult r = ReadAll(path, {.compression = Compression::kGzip, .skip_corrupt = skip});
    EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss) << r.status;
    EXPECT_THAT(r.status.message(), HasSubstr(path));
    EXPECT_LT(r.records.size(), 100u);
  }
}

TEST(TFRecordReaderTest, TruncatedGzipStreamIsAnError) {
  ScopedTempDir dir;
  const std::string data = ReadFile(kSmallGz);
  const std::string path = dir.File("cut.tfrecord.gz");
  WriteFile(path, data.substr(0, data.size() / 2));
  const ReadResult r = ReadAll(path, {.compression = Compression::kGzip});
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status.message(), HasSubstr(path + ": truncated gzip stream at compressed offset"));
  EXPECT_THAT(r.status.message(), HasSubstr("uncompressed offset"));
  EXPECT_LT(r.records.size(), 100u);
  for (size_t i = 0; i < r.records.size(); ++i) ExpectSmallRecord(r.records[i], i);
}

// Data after a zlib stream is read as another stream (a parked TFRecordWriter writes several):
// junk there is corrupt, named with its offset.
TEST(TFRecordReaderTest, DataAfterTheZlibStreamIsAnError) {
  ScopedTempDir dir;
  const std::string path = dir.File("trailing.tfrecord.zlib");
  const std::string zlib = ReadFile(kSmallZlib);
  WriteFile(path, zlib + "junk");
  const ReadResult r = ReadAll(path, {.compression = Compression::kZlib});
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
  // zlib reports the bad header after reading its two bytes.
  EXPECT_THAT(std::string(r.status.message()),
              HasSubstr(absl::StrCat("corrupt zlib stream at compressed offset ", zlib.size() + 2,
                                     " (zlib: incorrect header check) (reading record 100")));
  EXPECT_EQ(r.records.size(), 100u);
}

// Concatenated gzip members, or zlib streams (a parked TFRecordWriter writes several), read as one.
TEST(TFRecordReaderTest, ConcatenatedStreamsReadAsOneStream) {
  for (const auto& [file, compression] :
       {std::pair{kSmallGz, Compression::kGzip}, std::pair{kSmallZlib, Compression::kZlib}}) {
    SCOPED_TRACE(CompressionName(compression));
    ScopedTempDir dir;
    const std::string path = dir.File("twice.tfrecord");
    const std::string once = ReadFile(file);
    WriteFile(path, once + once);
    const ReadResult r = ReadAll(path, {.compression = compression});
    ASSERT_TRUE(r.status.ok()) << r.status;
    ASSERT_EQ(r.records.size(), 200u);
    for (int i = 0; i < 200; ++i) ExpectSmallRecord(r.records[i], i % 100);
  }
}

}  // namespace
}  // namespace sluice
