#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dataset/proto/iterator_state.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/proto/example.pb.h"
#include "io/tfrecord_writer.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::Iota;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Data(const std::string& name) { return std::string(SLUICE_TEST_DATA) + "/" + name; }

// The records, checking that each element is one scalar bytes tensor.
std::vector<std::string> RecordStrings(const std::vector<Element>& elements) {
  std::vector<std::string> out;
  for (const Element& e : elements) {
    EXPECT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].dtype(), DType::kBytes);
    EXPECT_EQ(e[0].rank(), 0);
    out.push_back(e[0].scalar<std::string>());
  }
  return out;
}

// The `id` feature of each record (a tf.train.Example of the small100 files).
std::vector<int64_t> Ids(const std::vector<Element>& elements) {
  std::vector<int64_t> out;
  for (const std::string& r : RecordStrings(elements)) {
    proto::Example ex;
    EXPECT_TRUE(ex.ParseFromString(r));
    const auto& f = ex.features().feature();
    auto it = f.find("id");
    if (it == f.end() || it->second.int64_list().value_size() != 1) {
      ADD_FAILURE() << "record without an id";
      out.push_back(-1);
      continue;
    }
    out.push_back(it->second.int64_list().value(0));
  }
  return out;
}

std::vector<int64_t> Concat(std::vector<std::vector<int64_t>> parts) {
  std::vector<int64_t> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<int64_t> Without(std::vector<int64_t> v, int64_t x) {
  v.erase(std::remove(v.begin(), v.end(), x), v.end());
  return v;
}

std::optional<NodeStatsSnapshot> FindNodeSnapshot(const std::vector<NodeStatsSnapshot>& stats,
                                                  const std::string& name) {
  for (const auto& s : stats) {
    if (s.name == name) return s;
  }
  return std::nullopt;
}

// What a sequential interleave of the files (tf.data's, block length 1)
// yields, from each file's records read on its own: `cycle` files are open;
// records are taken round robin; a file that ends gives its place to the
// next file, and the turn passes on.
std::vector<std::string> RoundRobin(const std::vector<std::vector<std::string>>& files,
                                    size_t cycle) {
  std::vector<std::string> out;
  std::vector<int> slot_file(cycle, -1);
  std::vector<size_t> pos(files.size(), 0);
  size_t next = 0, cursor = 0;
  int open = 0;
  for (size_t i = 0; i < cycle && next < files.size(); ++i) {
    slot_file[i] = static_cast<int>(next++);
    ++open;
  }
  while (open > 0) {
    int f = slot_file[cursor];
    if (f >= 0) {
      if (pos[f] < files[f].size()) {
        out.push_back(files[f][pos[f]++]);
      } else if (next < files.size()) {
        slot_file[cursor] = static_cast<int>(next++);
      } else {
        slot_file[cursor] = -1;
        --open;
      }
    }
    cursor = (cursor + 1) % cycle;
  }
  return out;
}

TEST(TFRecordTest, ReadsGoldenFileRecordsInOrder) {
  auto ds = Dataset::TFRecord(Data("small100.tfrecord"));
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ids(*out), ElementsAreArray(Iota(0, 100)));
}

TEST(TFRecordTest, CompressionGuessedFromTheSuffixOrGiven) {
  for (const char* name : {"small100.tfrecord.gz", "small100.tfrecord.zlib"}) {
    auto out = Collect(Dataset::TFRecord(Data(name)));
    ASSERT_TRUE(out.ok()) << name << ": " << out.status();
    EXPECT_THAT(Ids(*out), ElementsAreArray(Iota(0, 100))) << name;
  }
  auto given =
      Collect(Dataset::TFRecord(Data("small100.tfrecord.gz"), {.compression = Compression::kGzip}));
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->size(), 100u);
  // A given compression overrides the suffix: this gzip file is not plain.
  auto wrong =
      Collect(Dataset::TFRecord(Data("small100.tfrecord.gz"), {.compression = Compression::kNone}));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kDataLoss);
}

TEST(TFRecordTest, FilesInSequence) {
  auto out = Collect(Dataset::TFRecord(
      std::vector<std::string>{Data("small100.tfrecord.zlib"), Data("small100.tfrecord")}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ids(*out), ElementsAreArray(Concat({Iota(0, 100), Iota(0, 100)})));
}

TEST(TFRecordTest, NoFiles) {
  auto out = Collect(Dataset::TFRecord(std::vector<std::string>{}));
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->empty());
}

TEST(TFRecordTest, BadNumParallelReadsIsAnError) {
  auto out = Collect(Dataset::TFRecord(Data("small100.tfrecord"), {.num_parallel_reads = 0}));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("num_parallel_reads"));
}

class TFRecordParallelTest : public ::testing::TestWithParam<int> {
 protected:
  TFRecordOptions ReadOptions(bool skip_corrupt = false) const {
    return {.num_parallel_reads = GetParam(), .skip_corrupt = skip_corrupt};
  }
};

// with_index: each record with its index in its file as the reader counts (a skipped record
// included), so that record k of small100 is index k even after the corrupt record 41; exact
// across a checkpoint that seeks past the skipped record, where counting elements is one short.
TEST(TFRecordTest, WithIndexGivesEachRecordsIndexInItsFile) {
  const std::string corrupt = Data("small100.corrupt-record41.tfrecord");
  auto ds = Dataset::TFRecord(std::vector<std::string>{corrupt, Data("images3.tfrecord")},
                              {.skip_corrupt = true, .with_index = true});
  ASSERT_EQ(ds.element_spec().components().size(), 2u);
  EXPECT_EQ(ds.element_spec().components()[1].dtype, DType::kInt64);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 102u);
  std::vector<Element> records;
  std::vector<int64_t> indices;
  for (const Element& e : *out) {
    ASSERT_EQ(e.size(), 2u);
    records.push_back({e[0]});
    indices.push_back(e[1].scalar<int64_t>());
  }
  EXPECT_THAT(std::vector<int64_t>(indices.begin(), indices.begin() + 99),
              ElementsAreArray(Ids(std::vector<Element>(records.begin(), records.begin() + 99))));
  EXPECT_EQ(indices[41], 42);  // record 41 was skipped
  EXPECT_THAT(std::vector<int64_t>(indices.begin() + 99, indices.end()),
              ElementsAreArray({0, 1, 2}));  // each file counts from 0
  testing::ExpectCheckpointsResumeExactly(ds, {0, 40, 41, 60, 99, 101});
  EXPECT_THAT(ds.DebugString(), HasSubstr("with_index"));
  // A Shuffle's checkpoint keeps its buffer as record positions and reads them again on restore
  // (a seek per record): the indices come back with them.
  testing::ExpectCheckpointsResumeExactly(
      Dataset::TFRecord(corrupt, {.skip_corrupt = true, .with_index = true})
          .Shuffle(30, {.seed = 4}),
      {0, 20, 45, 70});
}

TEST(TFRecordTest, WithIndexReadsOneFileAtATime) {
  auto it =
      Dataset::TFRecord(Data("small100.tfrecord"), {.num_parallel_reads = 2, .with_index = true})
          .MakeIterator();
  const absl::Status status = it->GetNext().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr("with_index reads the files one at a time"));
}

TEST_P(TFRecordParallelTest, CorruptRecordErrorNamesFileRecordAndOffset) {
  const std::string path = Data("small100.corrupt-record41.tfrecord");
  auto it = Dataset::TFRecord(path, ReadOptions()).MakeIterator();
  auto first = Drain(*it, 41);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(Ids(*first), ElementsAreArray(Iota(0, 41)));
  auto e = it->GetNext();
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(
      std::string(e.status().message()),
      StartsWith(absl::StrCat("TFRecord[0] at element 41: ", path, ": record 41 at offset ")));
  EXPECT_THAT(e.status().message(), HasSubstr("data CRC mismatch"));
}

TEST_P(TFRecordParallelTest, AfterAnErrorTheNextFileFollows) {
  auto ds = Dataset::TFRecord(std::vector<std::string>{Data("small100.corrupt-record41.tfrecord"),
                                                       Data("no-such-file.tfrecord"),
                                                       Data("small100.tfrecord.gz")},
                              ReadOptions())
                .IgnoreErrors();
  auto it = ds.MakeIterator();
  auto out = Drain(*it);
  ASSERT_TRUE(out.ok()) << out.status();
  auto small = Collect(Dataset::TFRecord(Data("small100.tfrecord")));
  ASSERT_TRUE(small.ok());
  std::vector<std::vector<std::string>> files = {RecordStrings(*small), {}, RecordStrings(*small)};
  files[0].resize(41);  // The corrupt file ends at its error; the missing one is empty.
  EXPECT_EQ(RecordStrings(*out), RoundRobin(files, GetParam() == kAutotune ? 16 : GetParam()));
  std::optional<NodeStatsSnapshot> ignore = FindNodeSnapshot(it->Stats(), "IgnoreErrors[1]");
  ASSERT_TRUE(ignore.has_value());
  EXPECT_EQ(ignore->skipped, 2);  // The corrupt record and the missing file.
}

TEST_P(TFRecordParallelTest, MissingFileIsNotFoundNamingIt) {
  const std::string path = Data("no-such-file.tfrecord");
  auto out = Collect(Dataset::TFRecord(path, ReadOptions()));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(out.status().message(), HasSubstr("TFRecord[0] at element 0: "));
  EXPECT_THAT(out.status().message(), HasSubstr(path));
}

TEST_P(TFRecordParallelTest, SkipCorruptSkipsAndCounts) {
  auto it = Dataset::TFRecord(Data("small100.corrupt-record41.tfrecord"), ReadOptions(true))
                .MakeIterator();
  auto out = Drain(*it);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ids(*out), ElementsAreArray(Without(Iota(0, 100), 41)));
  std::optional<NodeStatsSnapshot> node = FindNodeSnapshot(it->Stats(), "TFRecord[0]");
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->skipped, 1);
  EXPECT_EQ(node->elements_produced, 99);
}

TEST_P(TFRecordParallelTest, GoldenFilesInterleaveRoundRobin) {
  const std::vector<std::string> names = {"small100.tfrecord", "images3.tfrecord",
                                          "small100.tfrecord.gz", "small100.truncated.tfrecord",
                                          "small100.tfrecord.zlib"};
  std::vector<std::string> paths;
  std::vector<std::vector<std::string>> per_file;
  for (const std::string& n : names) {
    paths.push_back(Data(n));
    auto one = Collect(Dataset::TFRecord(Data(n), {.skip_corrupt = true}));
    ASSERT_TRUE(one.ok()) << one.status();
    per_file.push_back(RecordStrings(*one));
  }
  ASSERT_EQ(per_file[1].size(), 3u);
  ASSERT_EQ(per_file[3].size(), 99u);  // The truncated last record is skipped.
  auto out = Collect(Dataset::TFRecord(paths, ReadOptions(true)));
  ASSERT_TRUE(out.ok()) << out.status();
  const size_t cycle = GetParam() == kAutotune ? 16 : GetParam();
  EXPECT_EQ(RecordStrings(*out), RoundRobin(per_file, cycle));
}

TEST_P(TFRecordParallelTest, CheckpointsMidFile) {
  // Plain then gzip: positions inside each, at the boundary, and at the end.
  auto ds = Dataset::TFRecord(
      std::vector<std::string>{Data("small100.tfrecord"), Data("small100.tfrecord.gz")},
      ReadOptions());
  testing::ExpectCheckpointsResumeExactly(ds, {0, 1, 37, 99, 100, 101, 163, 199, 200});
}

TEST_P(TFRecordParallelTest, CheckpointsWithSkippedRecords) {
  auto ds = Dataset::TFRecord(std::vector<std::string>{Data("small100.corrupt-record41.tfrecord"),
                                                       Data("images3.tfrecord")},
                              ReadOptions(true));
  testing::ExpectCheckpointsResumeExactly(ds, {0, 40, 41, 42, 60, 99, 101, 102});
}

TEST_P(TFRecordParallelTest, CheckpointKeepsAPendingError) {
  auto ds = Dataset::TFRecord(std::vector<std::string>{Data("small100.corrupt-record41.tfrecord"),
                                                       Data("small100.tfrecord")},
                              ReadOptions());
  const int64_t before_error = GetParam() == 1 ? 41 : 82;  // Round robin: 41 from each.
  auto full = ds.MakeIterator();
  ASSERT_TRUE(Drain(*full, before_error).ok());
  auto want = full->GetNext();
  ASSERT_FALSE(want.ok());
  for (int64_t k : {before_error - 3, before_error}) {
    auto it = ds.MakeIterator();
    ASSERT_TRUE(Drain(*it, k).ok());
    // Let reader threads run ahead, so that the error is likely buffered.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto saved = it->Save();
    ASSERT_TRUE(saved.ok()) << saved.status();
    it.reset();
    auto fresh = ds.MakeIterator();
    ASSERT_TRUE(fresh->Restore(*saved).ok());
    auto rest = Drain(*fresh, before_error - k);
    ASSERT_TRUE(rest.ok()) << rest.status();
    auto got = fresh->GetNext();
    ASSERT_FALSE(got.ok()) << "k=" << k;
    EXPECT_EQ(got.status(), want.status()) << "k=" << k;
  }
}

TEST_P(TFRecordParallelTest, EndOfSequenceRepeats) {
  auto it = Dataset::TFRecord(Data("images3.tfrecord"), ReadOptions()).MakeIterator();
  auto out = Drain(*it);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok());
    EXPECT_FALSE(e->has_value());
  }
}

INSTANTIATE_TEST_SUITE_P(NumParallelReads, TFRecordParallelTest,
                         ::testing::Values(1, 2, 8, kAutotune));

// Writes `records` to `path` (replacing it).
void WriteRecords(const std::string& path, const std::vector<std::string>& records,
                  Compression compression = Compression::kNone) {
  auto w = TFRecordWriter::Open(path, {.compression = compression, .sync = false});
  ASSERT_TRUE(w.ok()) << w.status();
  for (const std::string& r : records) EXPECT_TRUE((*w)->Write(r).ok());
  EXPECT_TRUE((*w)->Close().ok());
}

// Files written here, each record naming its file and index, so that the
// order shows which file every record came from.
class TFRecordFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("tfrecord_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes files with these record counts; returns their paths.
  std::vector<std::string> Write(const std::vector<int>& counts) {
    std::vector<std::string> paths;
    for (size_t f = 0; f < counts.size(); ++f) {
      const bool gz = f % 3 == 2;
      const std::string path =
          (dir_ / absl::StrCat("f", f, gz ? ".tfrecord.gz" : ".tfrecord")).string();
      std::vector<std::string> records;
      for (int i = 0; i < counts[f]; ++i) records.push_back(absl::StrCat("f", f, "-r", i));
      WriteRecords(path, records, gz ? Compression::kGzip : Compression::kNone);
      paths.push_back(path);
      expected_.push_back(std::move(records));
    }
    return paths;
  }

  std::filesystem::path dir_;
  std::vector<std::vector<std::string>> expected_;
};

TEST_F(TFRecordFilesTest, OrderIsARoundRobinInterleaveWhateverTheThreads) {
  // Lengths that end at different times, with an empty file and a long one.
  auto paths = Write({5, 0, 12, 1, 7, 30, 3, 2, 9});
  for (int reads : {1, 2, 3, 8, 16}) {
    auto out = Collect(Dataset::TFRecord(paths, {.num_parallel_reads = reads}));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(RecordStrings(*out), RoundRobin(expected_, reads)) << "num_parallel_reads=" << reads;
  }
}

TEST_F(TFRecordFilesTest, OrderDoesNotDependOnTheKnobsAutotuneTurns) {
  auto paths = Write({5, 0, 12, 1, 7, 30, 3, 2, 9});
  const std::vector<std::string> want = RoundRobin(expected_, 4);
  for (int64_t threads : {1, 2, 3}) {
    for (int64_t buffer : {1, 2, 3, 100}) {
      auto it = Dataset::TFRecord(paths, {.num_parallel_reads = 4}).MakeIterator();
      auto first = Drain(*it, 1);  // Makes the nodes; then turn the knobs.
      ASSERT_TRUE(first.ok());
      for (const auto& node : it->stats_registry()->Nodes()) {
        if (node->name != "TFRecord[0]") continue;
        node->parallelism.value = threads;
        node->buffer_size.value = buffer;
      }
      auto rest = Drain(*it);
      ASSERT_TRUE(rest.ok()) << rest.status();
      std::vector<std::string> got = RecordStrings(*first);
      for (const std::string& r : RecordStrings(*rest)) got.push_back(r);
      EXPECT_EQ(got, want) << "threads=" << threads << " buffer=" << buffer;
    }
  }
}

TEST_F(TFRecordFilesTest, NonDeterministicYieldsEveryRecord) {
  auto paths = Write({50, 3, 80, 20});
  auto ds =
      Dataset::TFRecord(paths, {.num_parallel_reads = 3}).WithOptions({.deterministic = false});
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<std::string> got = RecordStrings(*out);
  std::vector<std::string> want;
  for (const auto& f : expected_) want.insert(want.end(), f.begin(), f.end());
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
}

TEST_F(TFRecordFilesTest, ParallelCheckpointsHoldBufferedRecords) {
  auto paths = Write({40, 5, 60, 0, 25, 33});
  auto ds = Dataset::TFRecord(paths, {.num_parallel_reads = 3});
  testing::ExpectCheckpointsResumeExactly(ds, {0, 1, 2, 3, 14, 15, 16, 50, 100, 150, 162, 163});
}

TEST_F(TFRecordFilesTest, StatsReportKnobsAndBoundedBuffers) {
  auto paths = Write({100, 100});
  auto it = Dataset::TFRecord(paths, {.num_parallel_reads = kAutotune}).MakeIterator();
  auto first = Drain(*it, 1);
  ASSERT_TRUE(first.ok());
  // Each file's buffer fills to 16 records; the first file's, down to 15, is
  // not refilled before half of it is gone.
  for (int i = 0; i < 400; ++i) {
    std::optional<NodeStatsSnapshot> node = FindNodeSnapshot(it->Stats(), "TFRecord[0]");
    ASSERT_TRUE(node.has_value());
    if (node->buffered_elements >= 31) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // Would it overfill?
  auto stats = it->Stats();
  std::optional<NodeStatsSnapshot> node = FindNodeSnapshot(stats, "TFRecord[0]");
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->parallelism, 2);   // At most one reader per open file.
  EXPECT_EQ(node->buffer_size, 16);  // Records buffered per file.
  EXPECT_EQ(node->cycle_length, 16);
  EXPECT_EQ(node->buffered_elements, 31);
  // "f0-r1".."f0-r15" and "f1-r0".."f1-r15": 9 * 5 + 6 * 6 + 10 * 5 + 6 * 6 bytes.
  EXPECT_EQ(node->buffered_bytes, 167);
  // Taking 7 more from each file brings the first to 8, half of 16: refilled.
  ASSERT_TRUE(Drain(*it, 14).ok());
  for (int i = 0; i < 400; ++i) {
    if (FindNodeSnapshot(it->Stats(), "TFRecord[0]")->buffered_elements == 9 + 16) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(FindNodeSnapshot(it->Stats(), "TFRecord[0]")->buffered_elements, 9 + 16);
  auto rest = Drain(*it);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->size(), 185u);
  stats = it->Stats();
  node = FindNodeSnapshot(stats, "TFRecord[0]");
  EXPECT_EQ(node->elements_produced, 200);
  EXPECT_GT(node->busy_ns, 0);
  EXPECT_EQ(node->buffered_elements, 0);
  EXPECT_EQ(node->buffered_bytes, 0);
}

// Uncompressed files are restored by seeking to the saved offset. A file rewritten with other
// records at the same offsets (the same size, records of the same lengths) resumed in the middle
// of the new data, silently; a checkpoint now keeps the file's size and the last record read
// before its position (offset and CRC), and reads that record again on restore.
TEST_F(TFRecordFilesTest, AFileRewrittenInPlaceIsDetectedOnRestore) {
  for (int reads : {1, 2}) {
    for (bool gz : {false, true}) {
      SCOPED_TRACE(absl::StrCat("num_parallel_reads=", reads, gz ? ", gzip" : ""));
      const Compression compression = gz ? Compression::kGzip : Compression::kNone;
      const std::string path = (dir_ / (gz ? "data.tfrecord.gz" : "data.tfrecord")).string();
      std::vector<std::string> before, after;
      for (int i = 0; i < 200; ++i) {  // more than a parallel reader reads ahead
        before.push_back(absl::StrFormat("before-%03d", i));
        after.push_back(absl::StrFormat("after--%03d", i));
      }
      WriteRecords(path, before, compression);
      const Dataset ds = Dataset::TFRecord(path, {.num_parallel_reads = reads});
      auto it = ds.MakeIterator();
      ASSERT_TRUE(Drain(*it, 5).ok());
      auto saved = it->Save();
      ASSERT_TRUE(saved.ok()) << saved.status();
      it.reset();
      // A restore, and a checkpoint of the restored iterator before it reads anything, keep it.
      auto restored = ds.MakeIterator();
      ASSERT_TRUE(restored->Restore(*saved).ok());
      auto resaved = restored->Save();
      ASSERT_TRUE(resaved.ok()) << resaved.status();

      const auto size = std::filesystem::file_size(path);
      WriteRecords(path, after, compression);
      if (!gz) {
        ASSERT_EQ(std::filesystem::file_size(path), size);  // the same offsets
      }
      for (const std::string* checkpoint : {&*saved, &*resaved}) {
        auto fresh = ds.MakeIterator();
        ASSERT_TRUE(fresh->Restore(*checkpoint).ok());
        absl::Status error;
        for (int i = 0; i < 300 && error.ok(); ++i) {
          auto e = fresh->GetNext();
          if (!e.ok()) error = e.status();
          ASSERT_TRUE(!e.ok() || e->has_value()) << "no error at the end";
          if (e.ok() && reads == 1) {
            FAIL() << "read " << (**e)[0].scalar<std::string>();
          }
        }
        EXPECT_EQ(error.code(), absl::StatusCode::kDataLoss) << error;
        EXPECT_THAT(error.message(), HasSubstr(path + ": "));
        EXPECT_THAT(error.message(), HasSubstr("(has the file changed?)"));
        if (!gz) {
          EXPECT_THAT(error.message(), HasSubstr("had CRC"));
        }
      }
    }
  }
}

TEST_F(TFRecordFilesTest, AFileOfAnotherSizeIsDetectedAndAnUnchangedOneRestoresExactly) {
  const std::string path = (dir_ / "data.tfrecord").string();
  std::vector<std::string> records;
  for (int i = 0; i < 50; ++i) records.push_back(absl::StrCat("r", i));
  WriteRecords(path, records);
  const Dataset ds = Dataset::TFRecord(path);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 20).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  auto rest = Drain(*it);
  ASSERT_TRUE(rest.ok());
  // Unchanged (the file copied away and back: another mtime, the same bytes): exactly the rest.
  std::filesystem::copy_file(path, path + ".copy");
  std::filesystem::rename(path + ".copy", path);
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto again = Drain(*fresh);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(RecordStrings(*again), RecordStrings(*rest));
  // One record appended: the records before the position are the same, the file is not.
  records.push_back("one more");
  WriteRecords(path, records);
  fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto e = fresh->GetNext();
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(e.status().message(), HasSubstr(path + ": "));
  EXPECT_THAT(e.status().message(), HasSubstr("when the checkpoint was saved (has the file "
                                              "changed?)"));
}

// A checkpoint written before fingerprints (none of their keys) restores as it did: unchecked.
TEST_F(TFRecordFilesTest, ACheckpointWithoutAFingerprintStillRestores) {
  const std::string path = (dir_ / "data.tfrecord").string();
  std::vector<std::string> records;
  for (int i = 0; i < 30; ++i) records.push_back(absl::StrCat("r", i));
  WriteRecords(path, records);
  for (int reads : {1, 2}) {
    const Dataset ds = Dataset::TFRecord(path, {.num_parallel_reads = reads});
    auto it = ds.MakeIterator();
    ASSERT_TRUE(Drain(*it, 7).ok());
    auto saved = it->Save();
    ASSERT_TRUE(saved.ok()) << saved.status();
    proto::IteratorCheckpoint checkpoint;
    ASSERT_TRUE(checkpoint.ParseFromString(*saved));
    auto& ints = *checkpoint.mutable_root()->mutable_ints();
    int removed = 0;
    for (auto k = ints.begin(); k != ints.end();) {
      const bool fingerprint =
          absl::StrContains(k->first, "file_size") || absl::StrContains(k->first, "last_");
      removed += fingerprint;
      k = fingerprint ? ints.erase(k) : std::next(k);
    }
    EXPECT_GE(removed, 4) << "num_parallel_reads=" << reads;  // size, record, offset, CRC
    auto rest = Drain(*it);
    ASSERT_TRUE(rest.ok());
    auto fresh = ds.MakeIterator();
    ASSERT_TRUE(fresh->Restore(checkpoint.SerializeAsString()).ok());
    auto again = Drain(*fresh);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(RecordStrings(*again), RecordStrings(*rest)) << "num_parallel_reads=" << reads;
  }
}

// Fingerprints no reader could have saved are DataLoss on restore.
TEST_F(TFRecordFilesTest, AFingerprintThatCannotPrecedeThePositionIsDataLoss) {
  const std::string path = (dir_ / "data.tfrecord").string();
  WriteRecords(path, {"a", "b", "c", "d"});
  const Dataset ds = Dataset::TFRecord(path);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 2).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, int64_t>>{{"last_record", 2},
                                                    {"last_record", -1},
                                                    {"last_offset", 1 << 20},
                                                    {"last_crc", int64_t{1} << 32},
                                                    {"file_size", -2}}) {
    proto::IteratorCheckpoint checkpoint;
    ASSERT_TRUE(checkpoint.ParseFromString(*saved));
    (*checkpoint.mutable_root()->mutable_ints())[key] = value;
    auto fresh = ds.MakeIterator();
    EXPECT_EQ(fresh->Restore(checkpoint.SerializeAsString()).code(), absl::StatusCode::kDataLoss)
        << key << " = " << value;
  }
}

TEST_F(TFRecordFilesTest, DestroyingMidStreamReturnsQuickly) {
  auto paths = Write({2000, 2000, 2000, 2000});
  for (int reads : {1, 4}) {
    auto it = Dataset::TFRecord(paths, {.num_parallel_reads = reads}).MakeIterator();
    ASSERT_TRUE(Drain(*it, 10).ok());
    const auto t0 = std::chrono::steady_clock::now();
    it.reset();
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_LT(ms, testing::kCancelBudgetMs) << "num_parallel_reads=" << reads;
  }
}

}  // namespace
}  // namespace sluice
