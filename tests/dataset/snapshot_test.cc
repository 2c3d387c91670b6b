#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/tfrecord_writer.h"
#include "tests/dataset/test_util.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::ExpectCheckpointsResumeExactly;
using ::sluice::testing::Ints;
using ::sluice::testing::Iota;
using ::sluice::testing::ScopedTempDir;
using ::testing::HasSubstr;

// Range(n) through a Map that counts its calls: how often the input was computed.
Dataset Counted(int64_t n, std::shared_ptr<std::atomic<int>> calls) {
  return Dataset::Range(n).Map([calls](Element e) -> absl::StatusOr<Element> {
    ++*calls;
    return e;
  });
}

// The one pipeline snapshot directory (path/<key>) under a Snapshot path.
fs::path RunDir(const std::string& path) {
  std::vector<fs::path> dirs;
  for (const auto& f : fs::directory_iterator(path)) {
    if (f.is_directory()) dirs.push_back(f.path());
  }
  EXPECT_EQ(dirs.size(), 1u) << path;
  return dirs.empty() ? fs::path(path) / "none" : dirs[0];
}

// Whether any manifest lies under a Snapshot path.
bool AnyManifest(const std::string& path) {
  for (const auto& f : fs::recursive_directory_iterator(path)) {
    if (f.path().filename() == "manifest.pb") return true;
  }
  return false;
}

TEST(SnapshotTest, TheFirstPassWritesAndLaterOnesRead) {
  ScopedTempDir dir;
  auto calls = std::make_shared<std::atomic<int>>(0);
  const Dataset ds = Counted(50, calls).Snapshot(dir.path(), {.num_shards = 2});
  auto first = Collect(ds);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(Ints(*first), Iota(0, 50));
  EXPECT_EQ(calls->load(), 50);
  // tf.data's layout: path/<16 hex digits>/ holds this pipeline's.
  EXPECT_THAT(RunDir(dir.path()).filename().string(), ::testing::MatchesRegex("[0-9a-f]{16}"));
  EXPECT_TRUE(fs::exists(RunDir(dir.path()) / "manifest.pb"));
  // Another pass, and another pipeline object of the same description (the next run), read it.
  auto second = Collect(ds);
  auto next_run = Collect(Counted(50, calls).Snapshot(dir.path(), {.num_shards = 2}));
  ASSERT_TRUE(second.ok() && next_run.ok());
  EXPECT_EQ(Ints(*second), Iota(0, 50));
  EXPECT_EQ(Ints(*next_run), Iota(0, 50));
  EXPECT_EQ(calls->load(), 50);
  // Under Repeat: written once, then read.
  ScopedTempDir other;
  auto repeated = Collect(Counted(5, calls).Snapshot(other.path()).Repeat(3));
  ASSERT_TRUE(repeated.ok());
  EXPECT_EQ(repeated->size(), 15u);
  EXPECT_EQ(calls->load(), 55);
}

TEST(SnapshotTest, AnInterruptedOrFailedPassIsNeverRead) {
  ScopedTempDir dir;
  auto calls = std::make_shared<std::atomic<int>>(0);
  const Dataset ds = Counted(10, calls).Snapshot(dir.path());
  {
    auto it = ds.MakeIterator();
    ASSERT_TRUE(Drain(*it, 4).ok());
  }  // destroyed part-way
  EXPECT_FALSE(AnyManifest(dir.path()));
  auto whole = Collect(ds);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(Ints(*whole), Iota(0, 10));
  EXPECT_EQ(calls->load(), 14);  // computed again, then written

  // An input error: passed through, nothing written.
  ScopedTempDir failed_dir;
  const Dataset failing = Dataset::Range(5)
                              .Map([](Element e) -> absl::StatusOr<Element> {
                                if (e[0].scalar<int64_t>() == 3) return absl::InternalError("no 3");
                                return e;
                              })
                              .Snapshot(failed_dir.path());
  auto failed = Collect(failing);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal);
  EXPECT_FALSE(AnyManifest(failed_dir.path()));
  // Nor is one that left only temporary files.
  for (const auto& f : fs::recursive_directory_iterator(failed_dir.path())) {
    if (!f.is_directory()) ADD_FAILURE() << "left behind: " << f.path();
  }
}

// Pipelines of other descriptions at one path (train and eval) keep a snapshot each, as tf.data's
// do: they used to replace each other's on every pass.
TEST(SnapshotTest, PipelinesOfOtherDescriptionsKeepTheirOwnAtOnePath) {
  ScopedTempDir dir;
  auto calls = std::make_shared<std::atomic<int>>(0);
  const Dataset five = Counted(5, calls).Snapshot(dir.path());
  const Dataset seven = Counted(7, calls).Snapshot(dir.path());
  ::testing::internal::CaptureStderr();
  for (int pass = 0; pass < 3; ++pass) {
    auto a = Collect(five);
    auto b = Collect(seven);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(Ints(*a), Iota(0, 5));
    EXPECT_EQ(Ints(*b), Iota(0, 7));
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(calls->load(), 12);  // each computed once
  int run_dirs = 0;
  for (const auto& f : fs::directory_iterator(dir.path())) run_dirs += f.is_directory();
  EXPECT_EQ(run_dirs, 2);

  // Descriptions alike but for their files' paths (a TFRecord node names its file count).
  fs::create_directories(dir.File("in"));
  for (const char* name : {"train", "eval"}) {
    auto w =
        TFRecordWriter::Open(dir.File(absl::StrCat("in/", name, ".tfrecord")), {.sync = false});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write(name).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  const Dataset train =
      Dataset::TFRecord(dir.File("in/train.tfrecord")).Snapshot(dir.File("records"));
  const Dataset eval =
      Dataset::TFRecord(dir.File("in/eval.tfrecord")).Snapshot(dir.File("records"));
  ASSERT_EQ(train.DebugString(), eval.DebugString()) << "the paths must make the difference";
  ::testing::internal::CaptureStderr();
  for (int pass = 0; pass < 2; ++pass) {
    auto a = Collect(train);
    auto b = Collect(eval);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->size(), 1u);
    ASSERT_EQ(b->size(), 1u);
    EXPECT_EQ((*a)[0][0].scalar<std::string>(), "train");
    EXPECT_EQ((*b)[0][0].scalar<std::string>(), "eval");
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // no rewrite
}

// A saved dataset at the top of the path (a Save, or a snapshot of the layout before the
// subdirectories) is neither read nor removed, and said once per Snapshot dataset.
TEST(SnapshotTest, ASavedDatasetAtTheTopOfThePathIsLeftAloneWithOneWarning) {
  ScopedTempDir dir;
  ASSERT_TRUE(Dataset::Range(3).Save(dir.path(), {.num_shards = 1}).ok());
  const std::set<std::string> saved = [&] {
    std::set<std::string> files;
    for (const auto& f : fs::directory_iterator(dir.path())) files.insert(f.path().string());
    return files;
  }();
  auto calls = std::make_shared<std::atomic<int>>(0);
  const Dataset ds = Counted(5, calls).Snapshot(dir.path());
  ::testing::internal::CaptureStderr();
  auto first = Collect(ds);
  auto second = Collect(ds);
  const std::string warning = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(Ints(*first), Iota(0, 5));
  EXPECT_EQ(Ints(*second), Iota(0, 5));
  EXPECT_EQ(calls->load(), 5);  // the second pass read the snapshot in its subdirectory
  EXPECT_THAT(warning, HasSubstr(dir.path() + " holds a saved dataset at its top level"));
  EXPECT_EQ(warning.find("top level"), warning.rfind("top level")) << warning;
  for (const std::string& f : saved) EXPECT_TRUE(fs::exists(f)) << f;
  auto loaded = Collect(Dataset::Load(dir.path()));  // the Save is whole
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(Ints(*loaded), Iota(0, 3));
}

// A pipeline whose input files changed rewrites its own snapshot, saying why.
TEST(SnapshotTest, AStaleSnapshotIsRewrittenSayingWhy) {
  ScopedTempDir dir;
  const std::string file = dir.File("in/data.tfrecord");
  fs::create_directories(dir.File("in"));
  auto write = [&](int records) {
    auto w = TFRecordWriter::Open(file, {.sync = false});
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < records; ++i) ASSERT_TRUE((*w)->Write("record").ok());
    ASSERT_TRUE((*w)->Close().ok());
  };
  write(3);
  const Dataset records = Dataset::ListFiles(dir.File("in/*.tfrecord"))
                              .Interleave([](const std::string& f) { return Dataset::TFRecord(f); })
                              .Snapshot(dir.File("snap"));
  auto three = Collect(records);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->size(), 3u);
  write(4);
  ::testing::internal::CaptureStderr();
  auto four = Collect(records);
  const std::string warning = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(four->size(), 4u);
  EXPECT_THAT(warning, HasSubstr("rewriting snapshot " + RunDir(dir.File("snap")).string() +
                                 ": input file " + file + " changed"));
  // In place: still one snapshot directory, whose new run is read from now on.
  auto reread = Collect(records);
  ASSERT_TRUE(reread.ok());
  EXPECT_EQ(reread->size(), 4u);
}

TEST(SnapshotTest, AFingerprintOfOnesOwnDecidesAlone) {
  ScopedTempDir dir;
  ASSERT_TRUE(Collect(Dataset::Range(5).Snapshot(dir.path(), {.fingerprint = "v1"})).ok());
  // Same fingerprint: reused even though the pipeline differs (the user vouches for it).
  auto reused = Collect(Dataset::Range(9).Snapshot(dir.path(), {.fingerprint = "v1"}));
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(Ints(*reused), Iota(0, 5));
  // Another fingerprint: a snapshot of its own; v1's stays.
  auto bumped = Collect(Dataset::Range(9).Snapshot(dir.path(), {.fingerprint = "v2"}));
  ASSERT_TRUE(bumped.ok());
  EXPECT_EQ(Ints(*bumped), Iota(0, 9));
  auto again = Collect(Dataset::Range(9).Snapshot(dir.path(), {.fingerprint = "v1"}));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Ints(*again), Iota(0, 5));
}

// Flips a byte in the payload of each of the given records of the TFRecord file `path` (each
// record: an 8-byte length, its 4-byte checksum, the payload, its 4-byte checksum): the records
// then fail their checksums, and the file keeps its size.
void FlipSnapshotRecordBytes(const std::string& path, const std::set<int>& records) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  uint64_t at = 0;
  for (int r = 0; r <= *records.rbegin(); ++r) {
    uint64_t length = 0;
    f.seekg(static_cast<std::streamoff>(at));
    f.read(reinterpret_cast<char*>(&length), sizeof(length));  // little-endian, as the machine
    ASSERT_TRUE(f.good() && length > 0) << path << ": record " << r;
    if (records.count(r) > 0) {
      const auto payload = static_cast<std::streamoff>(at + 12);
      char c = 0;
      f.seekg(payload);
      f.get(c);
      f.seekp(payload);
      f.put(static_cast<char>(c ^ 0x5a));
    }
    at += 16 + length;
  }
}

// The shard files of the snapshot in `dir`.
std::vector<std::string> SnapshotShards(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& f : fs::directory_iterator(dir)) {
    if (f.path().filename().string().rfind("shard-", 0) == 0) out.push_back(f.path().string());
  }
  return out;
}

// A snapshot damaged on disk (a record that fails its checksum) fails the pass that finds it,
// with one warning naming it, and is taken out of use: the next pass computes the input again and
// writes a new snapshot, whose writer removes the damaged one. It used to fail every pass and
// every run at that record.
TEST(SnapshotTest, ADamagedSnapshotFailsOnePassAndIsRewritten) {
  ScopedTempDir dir;
  auto calls = std::make_shared<std::atomic<int>>(0);
  const Dataset ds = Counted(10, calls).Snapshot(dir.path(), {.num_shards = 1});
  auto first = Collect(ds);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(calls->load(), 10);
  const std::string run_dir = RunDir(dir.path()).string();
  const std::vector<std::string> shards = SnapshotShards(run_dir);
  ASSERT_EQ(shards.size(), 1u);
  FlipSnapshotRecordBytes(shards[0], {3});

  ::testing::internal::CaptureStderr();
  auto damaged = Collect(ds);
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(damaged.status().code(), absl::StatusCode::kDataLoss) << damaged.status();
  EXPECT_THAT(damaged.status().message(), HasSubstr(shards[0]));
  EXPECT_THAT(warning, HasSubstr("snapshot " + run_dir + " is damaged ("));
  EXPECT_THAT(warning, HasSubstr(shards[0] + ": record 3 at offset"));
  EXPECT_THAT(warning, HasSubstr("the next pass writes a new one"));
  EXPECT_EQ(calls->load(), 10);
  EXPECT_FALSE(fs::exists(run_dir + "/manifest.pb"));

  auto rewritten = Collect(ds);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(Ints(*rewritten), Iota(0, 10));
  EXPECT_EQ(calls->load(), 20);
  // The damaged run and its manifest are gone; the new one is read from now on.
  EXPECT_FALSE(fs::exists(shards[0]));
  EXPECT_FALSE(fs::exists(run_dir + "/manifest.pb.damaged"));
  EXPECT_EQ(SnapshotShards(run_dir).size(), 1u);
  auto reread = Collect(ds);
  ASSERT_TRUE(reread.ok()) << reread.status();
  EXPECT_EQ(Ints(*reread), Iota(0, 10));
  EXPECT_EQ(calls->load(), 20);
}

// Under IgnoreErrors the damaged records are skipped and counted (a shard ends at its first), and
// the pass reads on, but the snapshot is still taken out of use, with one warning however many
// records are damaged.
TEST(SnapshotTest, ADamagedSnapshotUnderIgnoreErrorsWarnsOnceAndIsRewritten) {
  ScopedTempDir dir;
  auto calls = std::make_shared<std::atomic<int>>(0);
  const Dataset ds = Counted(10, calls).Snapshot(dir.path(), {.num_shards = 2});
  ASSERT_TRUE(Collect(ds).ok());
  const std::vector<std::string> shards = SnapshotShards(RunDir(dir.path()).string());
  ASSERT_EQ(shards.size(), 2u);
  for (const std::string& shard : shards) FlipSnapshotRecordBytes(shard, {1});

  int skipped = 0;
  ::testing::internal::CaptureStderr();
  auto skipping = Collect(ds.IgnoreErrors([&](const absl::Status&) { ++skipped; }));
  const std::string warning = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(skipping.ok()) << skipping.status();
  EXPECT_EQ(Ints(*skipping), Iota(0, 2));  // each shard's first element
  EXPECT_EQ(skipped, 2);
  size_t warnings = 0;
  for (size_t at = warning.find("is damaged"); at != std::string::npos;
       at = warning.find("is damaged", at + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 1u) << warning;
  auto rewritten = Collect(ds);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(Ints(*rewritten), Iota(0, 10));
  EXPECT_EQ(calls->load(), 20);
}

TEST(SnapshotTest, CheckpointsResumeExactlyWritingAndReading) {
  ScopedTempDir dir;
  const Dataset ds = Dataset::Range(30).Snapshot(dir.path(), {.num_shards = 3});
  // Writing: each iterator below finds no snapshot until a pass completes; a restored pass
  // part-way writes nothing, so the first full pass (Collect) writes it.
  ExpectCheckpointsResumeExactly(ds, {0, 1, 7, 29, 30});
  ASSERT_TRUE(fs::exists(RunDir(dir.path()) / "manifest.pb"));
  // Reading.
  ExpectCheckpointsResumeExactly(ds, {0, 1, 2, 3, 16, 30});
  // A reading checkpoint cannot restore once the snapshot is rewritten.
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  fs::remove(RunDir(dir.path()) / "manifest.pb");
  ASSERT_TRUE(Collect(Dataset::Range(30).Snapshot(dir.path())).ok());  // rewritten
  absl::Status restored = ds.MakeIterator()->Restore(*saved);
  EXPECT_EQ(restored.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(restored.message(), HasSubstr("rewritten since"));
}

}  // namespace
}  // namespace sluice
