#include "io/record_index.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/crc32c.h"
#include "io/tfrecord_format.h"
#include "io/tfrecord_reader.h"
#include "io/tfrecord_writer.h"
#include "tests/file_util.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

using ::sluice::testing::ReadFile;
using ::sluice::testing::ScopedTempDir;
using ::sluice::testing::WriteFile;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

const std::string kDataDir = SLUICE_TEST_DATA;

// Copies a fixture into `dir`, so that index files land in the temporary directory.
std::string CopyFixture(const ScopedTempDir& dir, const std::string& fixture) {
  const std::string to = dir.File(fixture);
  fs::copy_file(kDataDir + "/" + fixture, to);
  return to;
}

struct Sequential {
  std::vector<std::string> records;
  std::vector<uint64_t> offsets;
};

Sequential ReadSequentially(const std::string& path) {
  Sequential s;
  auto reader = TFRecordReader::Open(path);
  EXPECT_TRUE(reader.ok());
  std::string record;
  while (true) {
    const uint64_t offset = (*reader)->offset();
    absl::StatusOr<bool> more = (*reader)->ReadRecord(&record);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    s.records.push_back(record);
    s.offsets.push_back(offset);
  }
  return s;
}

void WriteRecords(const std::string& path, int n) {
  auto writer = TFRecordWriter::Open(path, {.sync = false});
  for (int i = 0; i < n; ++i) ASSERT_TRUE((*writer)->Write(std::string(i % 50, 'r')).ok());
  ASSERT_TRUE((*writer)->Close().ok());
}

void ExpectMatches(const RecordIndex& index, const Sequential& s) {
  ASSERT_EQ(index.size(), static_cast<int64_t>(s.records.size()));
  for (int64_t i = 0; i < index.size(); ++i) {
    EXPECT_EQ(index.offset(i), s.offsets[i]) << i;
    EXPECT_EQ(index.length(i), s.records[i].size()) << i;
  }
}

TEST(RecordIndexTest, BuildFindsEveryRecord) {
  for (const std::string name : {"small100.tfrecord", "images3.tfrecord"}) {
    const std::string path = kDataDir + "/" + name;
    auto index = RecordIndex::Build(path);
    ASSERT_TRUE(index.ok()) << index.status();
    ExpectMatches(*index, ReadSequentially(path));
    EXPECT_EQ(index->file_size(), fs::file_size(path));
  }
  auto images = RecordIndex::Build(kDataDir + "/images3.tfrecord");
  EXPECT_EQ(images->size(), 3);
  EXPECT_GT(images->length(2), 68135u);  // The JPEG and the other features.
}

TEST(RecordIndexTest, BuildChecksHeadersNotData) {
  // Only record 41's data is corrupt: every header is intact.
  auto corrupt = RecordIndex::Build(kDataDir + "/small100.corrupt-record41.tfrecord");
  ASSERT_TRUE(corrupt.ok()) << corrupt.status();
  EXPECT_EQ(corrupt->size(), 100);

  const std::string truncated_path = kDataDir + "/small100.truncated.tfrecord";
  auto truncated = RecordIndex::Build(truncated_path);
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(truncated.status().message(), HasSubstr(truncated_path + ": record 99 at offset "));
  EXPECT_THAT(truncated.status().message(), HasSubstr("truncated record"));

  auto gz = RecordIndex::Build(kDataDir + "/small100.tfrecord.gz");
  EXPECT_EQ(gz.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(gz.status().message(), HasSubstr("record 0 at offset 0: length CRC mismatch"));
  EXPECT_THAT(gz.status().message(), HasSubstr("GZIP"));

  auto missing = RecordIndex::Build(kDataDir + "/missing.tfrecord");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST(RecordIndexTest, CorruptHeaderFailsTheBuild) {
  ScopedTempDir dir;
  const std::string path = CopyFixture(dir, "small100.tfrecord");
  const Sequential s = ReadSequentially(path);
  std::string data = ReadFile(path);
  data[s.offsets[60] + 1] ^= 0x04;
  WriteFile(path, data);
  auto index = RecordIndex::Build(path);
  EXPECT_EQ(index.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(
      index.status().message(),
      HasSubstr("record 60 at offset " + std::to_string(s.offsets[60]) + ": length CRC mismatch"));
}

TEST(RecordIndexTest, EmptyFileHasAnEmptyIndex) {
  ScopedTempDir dir;
  const std::string path = dir.File("empty.tfrecord");
  WriteFile(path, "");
  auto index = RecordIndex::Build(path);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->size(), 0);
  ASSERT_TRUE(index->Save(path + ".index").ok());
  auto loaded = RecordIndex::Load(path + ".index", path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->size(), 0);
  EXPECT_EQ(loaded->ShardRange(4, 3), (std::pair<int64_t, int64_t>{0, 0}));
}

TEST(RecordIndexTest, SaveAndLoadRoundTrip) {
  ScopedTempDir dir;
  const std::string path = CopyFixture(dir, "small100.tfrecord");
  auto built = RecordIndex::Build(path);
  ASSERT_TRUE(built.ok());
  const std::string index_path = dir.File("small.idx");
  ASSERT_TRUE(built->Save(index_path).ok());
  EXPECT_EQ(ReadFile(index_path).substr(0, 8), "SLUICEIX");
  EXPECT_EQ(fs::file_size(index_path), 44u + 8 * 100);
  auto loaded = RecordIndex::Load(index_path, path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ExpectMatches(*loaded, ReadSequentially(path));
  EXPECT_EQ(loaded->file_mtime_ns(), built->file_mtime_ns());
}

TEST(RecordIndexTest, LoadRejectsAStaleIndex) {
  ScopedTempDir dir;
  const std::string path = CopyFixture(dir, "small100.tfrecord");
  const std::string index_path = path + ".index";
  ASSERT_TRUE(RecordIndex::Build(path)->Save(index_path).ok());
  ASSERT_TRUE(RecordIndex::Load(index_path, path).ok());

  // Same size, another mtime.
  struct timespec times[2] = {{0, UTIME_OMIT}, {1'000'000'000, 5}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  auto touched = RecordIndex::Load(index_path, path);
  EXPECT_EQ(touched.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(touched.status().message(), HasSubstr("stale record index"));
  EXPECT_THAT(touched.status().message(), HasSubstr(path));

  // Another size: one more record appended.
  ASSERT_TRUE(RecordIndex::Build(path)->Save(index_path).ok());
  std::string data = ReadFile(path);
  const Sequential s = ReadSequentially(path);
  data += data.substr(0, s.offsets[1]);
  WriteFile(path, data);
  auto grown = RecordIndex::Load(index_path, path);
  EXPECT_EQ(grown.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(grown.status().message(), HasSubstr(std::to_string(data.size()) + " bytes"));
}

TEST(RecordIndexTest, LoadRejectsCorruptIndexes) {
  ScopedTempDir dir;
  const std::string path = CopyFixture(dir, "small100.tfrecord");
  const std::string index_path = path + ".index";
  ASSERT_TRUE(RecordIndex::Build(path)->Save(index_path).ok());
  const std::string good = ReadFile(index_path);

  std::string flipped = good;
  flipped[100] ^= 1;
  WriteFile(index_path, flipped);
  auto bad_crc = RecordIndex::Load(index_path, path);
  EXPECT_EQ(bad_crc.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad_crc.status().message(), HasSubstr(index_path + ": corrupt record index"));

  WriteFile(index_path, "NOTANIDX" + good.substr(8));
  EXPECT_EQ(RecordIndex::Load(index_path, path).status().code(), absl::StatusCode::kDataLoss);
  WriteFile(index_path, good.substr(0, good.size() - 9));
  EXPECT_EQ(RecordIndex::Load(index_path, path).status().code(), absl::StatusCode::kDataLoss);

  EXPECT_EQ(RecordIndex::Load(dir.File("none.index"), path).status().code(),
            absl::StatusCode::kNotFound);
}

// Found by record_index_fuzzer: offsets near 2^64 wrapped the order check (offset + 16) and the
// file-size check, and a record's length then came out near 2^64 (std::length_error on Read).
TEST(RecordIndexTest, LoadRejectsOffsetsThatWouldWrapAround) {
  ScopedTempDir dir;
  const std::string path = CopyFixture(dir, "small100.tfrecord");
  const std::string index_path = path + ".index";
  ASSERT_TRUE(RecordIndex::Build(path)->Save(index_path).ok());
  const std::string good = ReadFile(index_path);
  // The header up to the count (40 bytes) says the real file's size and mtime; then three
  // offsets, the last two at 2^64 - 1, and a valid CRC.
  std::string bad = good.substr(0, 40);
  tfrecord::EncodeFixed64(bad.data() + 32, 3);
  for (uint64_t offset : {uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}}) {
    char b[8];
    tfrecord::EncodeFixed64(b, offset);
    bad.append(b, 8);
  }
  char crc[4];
  tfrecord::EncodeFixed32(crc, MaskCrc32c(Crc32c(bad)));
  bad.append(crc, 4);
  WriteFile(index_path, bad);
  absl::StatusOr<RecordIndex> loaded = RecordIndex::Load(index_path, path);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(loaded.status().message(), HasSubstr("offset of record 2 is out of order"));
  // Open rebuilds the index from the data instead.
  auto file = IndexedTFRecordFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->size(), 100);
  EXPECT_TRUE((*file)->Read(99).ok());
}

TEST(RecordIndexTest, LoadOrBuildCreatesThenReusesTheIndexFile) {
  ScopedTempDir dir;
  const std::string path = CopyFixture(dir, "small100.tfrecord");
  const std::string index_path = RecordIndex::IndexPathFor(path);
  EXPECT_EQ(index_path, path + ".index");
  ASSERT_FALSE(fs::exists(index_path));
  auto first = RecordIndex::LoadOrBuild(path);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(fs::exists(index_path));
  struct stat before;
  ASSERT_EQ(::stat(index_path.c_str(), &before), 0);

  auto second = RecordIndex::LoadOrBuild(path);
  ASSERT_TRUE(second.ok());
  struct stat after;
  ASSERT_EQ(::stat(index_path.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);  // Loaded, not rewritten (a rewrite renames a new inode).
  ExpectMatches(*second, ReadSequentially(path));

  // A stale index is rebuilt and replaced.
  std::string data = ReadFile(path);
  const Sequential s = ReadSequentially(path);
  WriteFile(path, data.substr(0, s.offsets[50]));
  auto rebuilt = RecordIndex::LoadOrBuild(path);
  ASSERT_TRUE(rebuilt.ok());
  EXPECT_EQ(rebuilt->size(), 50);
  ASSERT_EQ(::stat(index_path.c_str(), &after), 0);
  EXPECT_NE(after.st_ino, before.st_ino);
  EXPECT_TRUE(RecordIndex::Load(index_path, path).ok());

  // A corrupt TFRecord file is an error, not a silently short index.
  EXPECT_EQ(
      RecordIndex::LoadOrBuild(CopyFixture(dir, "small100.truncated.tfrecord")).status().code(),
      absl::StatusCode::kDataLoss);
}

TEST(RecordIndexTest, ShardRangesCoverEveryRecordOnce) {
  ScopedTempDir dir;
  for (int n : {0, 1, 7, 100, 101}) {
    const std::string path = dir.File("n" + std::to_string(n));
    WriteRecords(path, n);
    auto index = RecordIndex::Build(path);
    ASSERT_TRUE(index.ok());
    ASSERT_EQ(index->size(), n);
    for (int64_t shards : {1, 2, 3, 7, 16, 100, 101, 250}) {
      std::vector<int> hits(n, 0);
      int64_t next = 0, min_size = n, max_size = 0;
      for (int64_t k = 0; k < shards; ++k) {
        const auto [begin, end] = index->ShardRange(shards, k);
        EXPECT_EQ(begin, next) << n << " records, shard " << k << " of " << shards;
        ASSERT_LE(begin, end);
        for (int64_t i = begin; i < end; ++i) ++hits[i];
        min_size = std::min(min_size, end - begin);
        max_size = std::max(max_size, end - begin);
        next = end;
      }
      EXPECT_EQ(next, n);
      EXPECT_LE(max_size - min_size, 1);
      EXPECT_TRUE(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
    }
    EXPECT_EQ(index->ShardRange(0, 0), (std::pair<int64_t, int64_t>{0, 0}));
    EXPECT_EQ(index->ShardRange(3, 3), (std::pair<int64_t, int64_t>{0, 0}));
    EXPECT_EQ(index->ShardRange(3, -1), (std::pair<int64_t, int64_t>{0, 0}));
  }
}

TEST(IndexedTFRecordFileTest, RandomAccessEqualsSequentialOrder) {
  ScopedTempDir dir;
  for (const std::string name : {"small100.tfrecord", "images3.tfrecord"}) {
    const std::string path = CopyFixture(dir, name);
    const Sequential s = ReadSequentially(path);
    auto file = IndexedTFRecordFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_TRUE(fs::exists(path + ".index"));
    ASSERT_EQ((*file)->size(), static_cast<int64_t>(s.records.size()));
    std::vector<int64_t> order((*file)->size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
    std::shuffle(order.begin(), order.end(), std::mt19937(4));
    for (int64_t i : order) {
      absl::StatusOr<std::string> r = (*file)->Read(i);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(*r, s.records[i]) << i;
    }
    auto out = (*file)->Read((*file)->size());
    EXPECT_EQ(out.status().code(), absl::StatusCode::kOutOfRange);
    EXPECT_THAT(out.status().message(), HasSubstr(path));
    EXPECT_EQ((*file)->Read(-1).status().code(), absl::StatusCode::kOutOfRange);
  }
}

TEST(IndexedTFRecordFileTest, ConcurrentReadsAreConsistent) {
  ScopedTempDir dir;
  const std::string path = CopyFixture(dir, "small100.tfrecord");
  const Sequential s = ReadSequentially(path);
  auto file = IndexedTFRecordFile::Open(path);
  ASSERT_TRUE(file.ok());
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::string record;
      for (int k = 0; k < 2000; ++k) {
        const int64_t i = rng() % 100;
        if (!(*file)->Read(i, &record).ok() || record != s.records[i]) ++mismatches[t];
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(IndexedTFRecordFileTest, VerifiesCrcsOnRead) {
  ScopedTempDir dir;
  const std::string path = CopyFixture(dir, "small100.corrupt-record41.tfrecord");
  auto file = IndexedTFRecordFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE((*file)->Read(40).ok());
  auto bad = (*file)->Read(41);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad.status().message(), HasSubstr(path + ": record 41 at offset "));
  EXPECT_THAT(bad.status().message(), HasSubstr("data CRC mismatch"));
  EXPECT_TRUE((*file)->Read(42).ok());

  auto unchecked = IndexedTFRecordFile::Open(path, /*verify_crc=*/false);
  ASSERT_TRUE(unchecked.ok());
  EXPECT_TRUE((*unchecked)->Read(41).ok());
}

TEST(IndexedTFRecordFileTest, MissingFileIsNotFound) {
  auto file = IndexedTFRecordFile::Open(kDataDir + "/missing.tfrecord");
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(file.status().message(), HasSubstr("missing.tfrecord"));
}

TEST(TFRecordReaderSeekTest, SeeksWithTheIndex) {
  ScopedTempDir dir;
  const std::string path = CopyFixture(dir, "small100.tfrecord");
  const Sequential s = ReadSequentially(path);
  auto index = RecordIndex::LoadOrBuild(path);
  ASSERT_TRUE(index.ok());
  auto reader = TFRecordReader::Open(path);
  const auto [begin, end] = index->ShardRange(3, 1);
  ASSERT_TRUE((*reader)->Seek(index->offset(begin), begin).ok());
  std::string record;
  for (int64_t i = begin; i < end; ++i) {
    ASSERT_TRUE(*(*reader)->ReadRecord(&record));
    EXPECT_EQ(record, s.records[i]);
  }
  EXPECT_EQ((*reader)->records_read(), end);
}

}  // namespace
}  // namespace sluice
