#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dataset/dataset_base.h"
#include "dataset/proto/iterator_state.pb.h"
#include "dataset/proto/saved_dataset.pb.h"
#include "dataset/saved_dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using ::sluice::testing::Collect;
using ::sluice::testing::ExpectCheckpointsResumeExactly;
using ::sluice::testing::Ints;
using ::sluice::testing::Iota;
using ::sluice::testing::ScopedTempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Elements of three components of different dtypes and shapes: (i, [i, i/2, 1], "e<i>").
Dataset Mixed(int64_t n) {
  return Dataset::Range(n).Map([](Element e) -> absl::StatusOr<Element> {
    const int64_t i = e[0].scalar<int64_t>();
    return Element{e[0], Tensor::FromVector<float>({float(i), i / 2.0f, 1.0f}),
                   Tensor::Scalar<std::string>(absl::StrCat("e", i))};
  });
}

// Mixed, declaring its spec (int64[], float32[3], bytes[]).
Dataset MixedDeclared(int64_t n) {
  return Dataset::Range(n).Map(
      [](Element e) -> absl::StatusOr<Element> {
        const int64_t i = e[0].scalar<int64_t>();
        return Element{e[0], Tensor::FromVector<float>({float(i), i / 2.0f, 1.0f}),
                       Tensor::Scalar<std::string>(absl::StrCat("e", i))};
      },
      {.output_signature = ElementSpec({{DType::kInt64, PartialShape{}},
                                        {DType::kFloat32, PartialShape{3}},
                                        {DType::kBytes, PartialShape{}}})});
}

std::set<std::string> Files(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& f : fs::directory_iterator(dir)) out.insert(f.path().filename().string());
  return out;
}

proto::SavedDatasetManifest Manifest(const std::string& dir) {
  proto::SavedDatasetManifest m;
  std::ifstream in(dir + "/manifest.pb", std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&in));
  return m;
}

void ExpectSame(const std::vector<Element>& a, const std::vector<Element>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(ElementsEqual(a[i], b[i]))
        << i << ": " << ElementDebugString(a[i]) << " vs " << ElementDebugString(b[i]);
  }
}

TEST(SaveTest, LoadGivesTheElementsBackInOrder) {
  ScopedTempDir dir;
  ASSERT_TRUE(Mixed(100).Save(dir.path(), {.num_shards = 3}).ok());
  auto want = Collect(Mixed(100));
  auto got = Collect(Dataset::Load(dir.path()));
  ASSERT_TRUE(want.ok() && got.ok()) << got.status();
  ExpectSame(*got, *want);
  // Three shards of 34, 33 and 33 elements, and the manifest that names them.
  const proto::SavedDatasetManifest m = Manifest(dir.path());
  EXPECT_EQ(m.elements(), 100);
  ASSERT_EQ(m.shards_size(), 3);
  EXPECT_EQ(m.shards(0).elements(), 34);
  EXPECT_EQ(m.shards(2).elements(), 33);
  EXPECT_EQ(Files(dir.path()).size(), 4u);
  EXPECT_EQ(m.pipeline(), Mixed(100).DebugString());
  // len(): the manifest's count; unknown before anything is saved, or with a reader_fn.
  EXPECT_EQ(Dataset::Load(dir.path()).Cardinality(), 100);
  EXPECT_EQ(Dataset::Load(dir.path() + "/nothing").Cardinality(), kUnknownCardinality);
  const ReaderFn first = [](std::vector<Dataset> shards) -> absl::StatusOr<Dataset> {
    return shards[0];
  };
  EXPECT_EQ(Dataset::Load(dir.path(), {.reader_fn = first}).Cardinality(), kUnknownCardinality);
}

TEST(SaveTest, CompressedShardsRoundTrip) {
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    ScopedTempDir dir;
    ASSERT_TRUE(Mixed(50).Save(dir.path(), {.compression = c, .num_shards = 2}).ok());
    for (const std::string& f : Files(dir.path())) {
      if (f != "manifest.pb") {
        EXPECT_THAT(
            f, ::testing::EndsWith(c == Compression::kGzip ? ".tfrecord.gz" : ".tfrecord.zlib"));
      }
    }
    auto want = Collect(Mixed(50));
    auto got = Collect(Dataset::Load(dir.path()));
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectSame(*got, *want);
  }
}

TEST(SaveTest, ShardFnAndReaderFn) {
  ScopedTempDir dir;
  const ShardFn parity = [](const Element& e) -> absl::StatusOr<int64_t> {
    return e[0].scalar<int64_t>() % 2;
  };
  ASSERT_TRUE(Dataset::Range(10).Save(dir.path(), {.shard_fn = parity}).ok());
  ASSERT_EQ(Manifest(dir.path()).shards_size(), 2);
  // The default reader takes the shards in turn; a reader of one's own may concatenate them.
  auto round_robin = Collect(Dataset::Load(dir.path()));
  ASSERT_TRUE(round_robin.ok());
  EXPECT_EQ(Ints(*round_robin), Iota(0, 10));
  const ReaderFn concatenate = [](std::vector<Dataset> shards) -> absl::StatusOr<Dataset> {
    return shards[0].Concatenate(shards[1]);
  };
  auto concatenated = Collect(Dataset::Load(dir.path(), {.reader_fn = concatenate}));
  ASSERT_TRUE(concatenated.ok());
  EXPECT_THAT(Ints(*concatenated), ElementsAre(0, 2, 4, 6, 8, 1, 3, 5, 7, 9));
  // A shard id out of range is an error naming the element.
  const ShardFn negative = [](const Element&) -> absl::StatusOr<int64_t> { return -1; };
  absl::Status bad = Dataset::Range(3).Save(dir.File("other"), {.shard_fn = negative});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("shard_fn gave element 0 shard -1"));
}

// Descriptors this process holds open on files in `dir`.
int OpenDescriptorsIn(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(e.path(), ec).parent_path() == fs::path(dir)) ++n;
  }
  return n;
}

// A shard_fn naming more shards than may be open at once: the writer parks the least recently
// written ones, so descriptors (and buffers) stay bounded, and every shard still holds its
// elements in order, compressed or not.
TEST(SaveTest, AShardFnOfManyShardsKeepsFewOpen) {
  constexpr int64_t kShards = 3 * internal::SavedDatasetWriter::kMaxOpenShards + 7;
  constexpr int64_t kN = 6 * kShards;
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    SCOPED_TRACE(CompressionName(c));
    ScopedTempDir dir;
    int most_open = 0;
    const ShardFn modulo = [&](const Element& e) -> absl::StatusOr<int64_t> {
      most_open = std::max(most_open, OpenDescriptorsIn(dir.path()));
      return e[0].scalar<int64_t>() % kShards;
    };
    ASSERT_TRUE(Dataset::Range(kN).Save(dir.path(), {.compression = c, .shard_fn = modulo}).ok());
    EXPECT_GT(most_open, 0);
    EXPECT_LE(most_open, internal::SavedDatasetWriter::kMaxOpenShards);
    ASSERT_EQ(Manifest(dir.path()).shards_size(), kShards);
    const ReaderFn concatenate = [](std::vector<Dataset> shards) -> absl::StatusOr<Dataset> {
      Dataset all = shards[0];
      for (size_t i = 1; i < shards.size(); ++i) all = all.Concatenate(shards[i]);
      return all;
    };
    auto got = Collect(Dataset::Load(dir.path(), {.reader_fn = concatenate}));
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<int64_t> want;
    for (int64_t shard = 0; shard < kShards; ++shard) {
      for (int64_t i = shard; i < kN; i += kShards) want.push_back(i);
    }
    EXPECT_EQ(Ints(*got), want);
  }
}

// A shard that cannot be opened (the descriptor limit) fails the save with the error, and the
// writer, destroyed with shards open and parked, leaves nothing behind. A failed open left a null
// writer in the shard map, which the destructor then dereferenced.
TEST(SaveTest, AShardThatCannotBeOpenedFailsTheSaveAndLeavesNothing) {
  ScopedTempDir dir;
  struct rlimit before;
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  int open_now = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++open_now;
  // Room for a few shards only: the tenth cannot be opened.
  struct rlimit low = before;
  low.rlim_cur = static_cast<rlim_t>(open_now + 8);
  const ShardFn modulo = [](const Element& e) -> absl::StatusOr<int64_t> {
    return e[0].scalar<int64_t>() % 20;
  };
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  const absl::Status s = Dataset::Range(100).Save(dir.path(), {.shard_fn = modulo});
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &before), 0);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("Too many open files")) << s;
  for (const auto& f : fs::directory_iterator(dir.path())) ADD_FAILURE() << "left: " << f.path();
}

// An error part-way leaves the earlier save whole and no temporary files behind; a new save
// replaces the old shards.
TEST(SaveTest, AFailedSaveLosesNothingAndANewOneReplacesTheOld) {
  ScopedTempDir dir;
  ASSERT_TRUE(Dataset::Range(10).Save(dir.path(), {.num_shards = 2}).ok());
  const std::set<std::string> before = Files(dir.path());
  const Dataset failing = Dataset::Range(10).Map([](Element e) -> absl::StatusOr<Element> {
    if (e[0].scalar<int64_t>() == 6) return absl::InternalError("bad element 6");
    return e;
  });
  absl::Status failed = failing.Save(dir.path(), {.num_shards = 2});
  EXPECT_EQ(failed.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(failed.message(), HasSubstr("Save to " + dir.path()));
  EXPECT_THAT(failed.message(), HasSubstr("bad element 6"));
  EXPECT_EQ(Files(dir.path()), before);
  auto kept = Collect(Dataset::Load(dir.path()));
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(Ints(*kept), Iota(0, 10));

  ASSERT_TRUE(Dataset::Range(20, 25).Save(dir.path(), {.num_shards = 2}).ok());
  const std::set<std::string> after = Files(dir.path());
  EXPECT_EQ(after.size(), 3u);  // the old run's two shards are gone
  for (const std::string& f : before) {
    if (f != "manifest.pb") {
      EXPECT_EQ(after.count(f), 0u) << f;
    }
  }
  auto replaced = Collect(Dataset::Load(dir.path()));
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(Ints(*replaced), Iota(20, 25));
}

// SaveOptions::check runs between elements (Python's Ctrl-C); its error ends even an infinite
// save, before any manifest, so the directory keeps what it held.
TEST(SaveTest, ACheckErrorStopsAnInfiniteSaveAndLosesNothing) {
  ScopedTempDir dir;
  ASSERT_TRUE(Dataset::Range(3).Save(dir.path(), {.num_shards = 1}).ok());
  const std::set<std::string> before = Files(dir.path());
  int checks = 0;
  absl::Status stopped = Dataset::Range(10).Repeat().Save(
      dir.path(), {.num_shards = 1,
                   .check =
                       [&checks]() {
                         return ++checks == 3 ? absl::CancelledError("interrupted")
                                              : absl::OkStatus();
                       },
                   .check_interval_seconds = 0});
  EXPECT_EQ(stopped.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(stopped.message(), HasSubstr("Save to " + dir.path() + ": interrupted"));
  EXPECT_EQ(checks, 3);
  EXPECT_EQ(Files(dir.path()), before);
  auto kept = Collect(Dataset::Load(dir.path()));
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(Ints(*kept), Iota(0, 3));
}

// An element larger than a record may hold (1 GiB, what the readers accept) fails the Save
// before it is copied, and the directory keeps what it held. Protobuf wrote an element past 2 GiB
// as an empty record, which Load read back as an element of no components, and one of 1-2 GiB as
// a record that Load refused. (The tensor's pages are never touched: no GiB is used.)
TEST(SaveTest, AnElementTooLargeForARecordFailsTheSaveAndLosesNothing) {
  ScopedTempDir dir;
  ASSERT_TRUE(Dataset::Range(3).Save(dir.path(), {.num_shards = 1}).ok());
  const std::set<std::string> before = Files(dir.path());
  const Tensor huge(DType::kUint8, Shape{(int64_t{1} << 30) + 1});
  const absl::Status s = Dataset::FromTensors({huge}).Save(dir.path(), {.num_shards = 1});
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(s.message(), HasSubstr("element 0: an element of 1073741825 bytes is over the "
                                     "1073741824 bytes a record may hold"));
  EXPECT_EQ(Files(dir.path()), before);
  auto kept = Collect(Dataset::Load(dir.path()));
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(Ints(*kept), Iota(0, 3));
}

// Two writers of one directory at once (two jobs saving the same dataset): the first to finish
// removes the run its manifest replaced, never the other writer's files, and the other then
// replaces it. A run none of whose files changed for an hour (a writer that died) goes too.
TEST(SaveTest, AWriterKeepsAnotherWritersShardsAndRemovesStaleRuns) {
  ScopedTempDir dir;
  ASSERT_TRUE(Dataset::Range(3).Save(dir.path(), {.num_shards = 1}).ok());
  const std::string first_run = Manifest(dir.path()).run_id();
  const std::string stale = dir.path() + "/shard-00000000deadbeef-00000.tfrecord.tmp.1.0";
  std::ofstream(stale) << "left by a writer that died";
  fs::last_write_time(stale, fs::file_time_type::clock::now() -
                                 internal::SavedDatasetWriter::kStaleRunAge -
                                 std::chrono::minutes(1));
  const std::string fresh = dir.path() + "/shard-00000000cafecafe-00000.tfrecord.tmp.1.0";
  std::ofstream(fresh) << "a writer still at work";

  const Dataset input = Dataset::Range(5);
  absl::StatusOr<proto::SavedDatasetManifest> identity =
      internal::DescribeSavedInput(*input.base(), "");
  ASSERT_TRUE(identity.ok()) << identity.status();
  auto a = internal::SavedDatasetWriter::Create(dir.path(), *identity, {.num_shards = 2});
  auto b = internal::SavedDatasetWriter::Create(dir.path(), *identity, {.num_shards = 2});
  ASSERT_TRUE(a.ok() && b.ok());
  for (int64_t i = 0; i < 5; ++i) {
    ASSERT_TRUE((*a)->Append(Element{Tensor::Scalar<int64_t>(i)}).ok());
    ASSERT_TRUE((*b)->Append(Element{Tensor::Scalar<int64_t>(100 + i)}).ok());
  }
  absl::StatusOr<proto::SavedDatasetManifest> b_done = (*b)->Finish();
  ASSERT_TRUE(b_done.ok()) << b_done.status();
  std::set<std::string> files = Files(dir.path());
  int unfinished = 0;  // a's two shards, under their temporary names
  for (const std::string& f : files) {
    EXPECT_FALSE(absl::StrContains(f, first_run)) << f << ": the replaced run's shard stays";
    unfinished += absl::StrContains(f, ".tmp.") && !absl::StrContains(f, "cafecafe");
  }
  EXPECT_EQ(unfinished, 2);
  EXPECT_EQ(files.count(fs::path(stale).filename().string()), 0u) << "the stale run stays";
  EXPECT_EQ(files.count(fs::path(fresh).filename().string()), 1u) << "a live run was removed";
  auto from_b = Collect(Dataset::Load(dir.path()));
  ASSERT_TRUE(from_b.ok()) << from_b.status();
  EXPECT_EQ(Ints(*from_b), Iota(100, 105));

  absl::StatusOr<proto::SavedDatasetManifest> a_done = (*a)->Finish();
  ASSERT_TRUE(a_done.ok()) << a_done.status();
  auto from_a = Collect(Dataset::Load(dir.path()));
  ASSERT_TRUE(from_a.ok()) << from_a.status();
  EXPECT_EQ(Ints(*from_a), Iota(0, 5));
  for (const std::string& f : Files(dir.path())) {
    EXPECT_FALSE(absl::StrContains(f, b_done->run_id())) << f << ": b's replaced run stays";
  }
}

// The names in `dir` of shard files (not directories) of any run, temporary or in place.
std::set<std::string> ShardFilesIn(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& f : fs::directory_iterator(dir)) {
    const std::string name = f.path().filename().string();
    if (absl::StartsWith(name, "shard-") && f.is_regular_file()) out.insert(name);
  }
  return out;
}

// A save whose manifest cannot be put in place (here a directory is in its way) fails, and
// removes the shards it had renamed into place, which no manifest named and no later save
// removed for an hour; the earlier save is untouched.
TEST(SaveTest, AManifestThatCannotBeCommittedLeavesNoShardsBehind) {
  ScopedTempDir dir, aside;
  ASSERT_TRUE(Dataset::Range(10).Save(dir.path(), {.num_shards = 2}).ok());
  const std::set<std::string> before = Files(dir.path());
  const std::string kept = aside.File("manifest.pb");
  fs::rename(dir.File("manifest.pb"), kept);
  fs::create_directories(dir.File("manifest.pb/in-the-way"));
  const absl::Status failed = Dataset::Range(20, 30).Save(dir.path(), {.num_shards = 2});
  EXPECT_FALSE(failed.ok());
  EXPECT_THAT(failed.message(), HasSubstr("Save to " + dir.path()));
  EXPECT_THAT(failed.message(), HasSubstr("manifest.pb"));
  std::set<std::string> earlier_shards = before;
  earlier_shards.erase("manifest.pb");
  EXPECT_EQ(ShardFilesIn(dir.path()), earlier_shards);
  fs::remove_all(dir.File("manifest.pb"));
  fs::rename(kept, dir.File("manifest.pb"));
  EXPECT_EQ(Files(dir.path()), before);
  auto loaded = Collect(Dataset::Load(dir.path()));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(Ints(*loaded), Iota(0, 10));
}

// The same when a shard cannot be renamed into place: those closed before it go too.
TEST(SaveTest, AShardThatCannotBeCommittedLeavesNoShardsBehind) {
  ScopedTempDir dir;
  const Dataset input = Dataset::Range(6);
  absl::StatusOr<proto::SavedDatasetManifest> identity =
      internal::DescribeSavedInput(*input.base(), "");
  ASSERT_TRUE(identity.ok()) << identity.status();
  auto writer = internal::SavedDatasetWriter::Create(dir.path(), *identity, {.num_shards = 3});
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (int64_t i = 0; i < 6; ++i) {
    ASSERT_TRUE((*writer)->Append(Element{Tensor::Scalar<int64_t>(i)}).ok());
  }
  // The last shard's final name, from its temporary file's, taken by a directory.
  std::string last;
  for (const std::string& f : ShardFilesIn(dir.path())) {
    if (absl::StrContains(f, "-00002.tfrecord.tmp.")) last = f.substr(0, f.find(".tmp."));
  }
  ASSERT_FALSE(last.empty());
  fs::create_directories(dir.File(last + "/in-the-way"));
  absl::StatusOr<proto::SavedDatasetManifest> done = (*writer)->Finish();
  EXPECT_FALSE(done.ok());
  EXPECT_THAT(done.status().message(), HasSubstr(last));
  EXPECT_THAT(ShardFilesIn(dir.path()), ::testing::IsEmpty());
  EXPECT_FALSE(fs::exists(dir.File("manifest.pb")));
  writer->reset();
  EXPECT_THAT(ShardFilesIn(dir.path()), ::testing::IsEmpty());
}

TEST(SaveTest, EmptyDatasetSavesAndLoadsEmpty) {
  ScopedTempDir dir;
  ASSERT_TRUE(Dataset::Range(0).Save(dir.path()).ok());
  auto got = Collect(Dataset::Load(dir.path()));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->empty());
}

TEST(LoadTest, MissingOrDamagedSavesAreClearErrors) {
  ScopedTempDir dir;
  auto missing = Collect(Dataset::Load(dir.File("nothing")));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no saved dataset in " + dir.File("nothing")));

  ASSERT_TRUE(Mixed(20).Save(dir.path(), {.num_shards = 2}).ok());
  const proto::SavedDatasetManifest m = Manifest(dir.path());
  const std::string shard = dir.File(m.shards(1).file());
  // A truncated shard is refused before anything is read.
  fs::resize_file(shard, m.shards(1).bytes() - 5);
  auto truncated = Collect(Dataset::Load(dir.path()));
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(truncated.status().message(), HasSubstr(shard));
  EXPECT_THAT(truncated.status().message(),
              HasSubstr(absl::StrCat("holds ", m.shards(1).bytes() - 5)));
  // A flipped byte is found by the record's checksum, naming the file and offset.
  fs::resize_file(shard, 0);
  ASSERT_TRUE(Mixed(20).Save(dir.path(), {.num_shards = 2}).ok());
  const proto::SavedDatasetManifest m2 = Manifest(dir.path());
  {
    std::fstream f(dir.File(m2.shards(0).file()), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  auto flipped = Collect(Dataset::Load(dir.path()));
  EXPECT_EQ(flipped.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(flipped.status().message(), HasSubstr(dir.File(m2.shards(0).file())));
  EXPECT_THAT(flipped.status().message(), HasSubstr("offset"));
  // A manifest that is not one.
  std::ofstream(dir.File("manifest.pb"), std::ios::binary) << "garbage";
  auto garbage = Collect(Dataset::Load(dir.path()));
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(garbage.status().message(), HasSubstr("is not a manifest"));
}

// tf.data's load reads the element_spec save recorded: Load's is the saved pipeline's, unknown
// dimensions included, read when first asked (a Load made before the save sees it).
TEST(LoadTest, TheElementSpecIsTheSavedPipelines) {
  ScopedTempDir dir;
  const Dataset load = Dataset::Load(dir.path());
  const Dataset saved =
      MixedDeclared(10).Batch(4);  // a last batch of 2: the batch dimension is unknown
  ASSERT_TRUE(saved.Save(dir.path(), {.num_shards = 2}).ok());
  EXPECT_EQ(saved.element_spec().DebugString(), "(int64[?], float32[?, 3], bytes[?])");
  EXPECT_EQ(load.element_spec().DebugString(), saved.element_spec().DebugString());
  EXPECT_EQ(Dataset::Load(dir.path()).Unbatch().element_spec().DebugString(),
            "(int64[], float32[3], bytes[])");
  auto got = Collect(load);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), 3u);
}

// What the manifest says of the elements is checked: a spec that is no spec is DataLoss naming
// the manifest; elements that do not match the recorded spec are DataLoss naming their record;
// a manifest without a spec (written before it was recorded) loads with an unknown one.
TEST(LoadTest, TheRecordedElementSpecIsCheckedNotTrusted) {
  ScopedTempDir dir;
  ASSERT_TRUE(MixedDeclared(6).Save(dir.path(), {.num_shards = 1}).ok());
  const proto::SavedDatasetManifest good = Manifest(dir.path());
  auto write = [&](const proto::SavedDatasetManifest& m) {
    std::ofstream out(dir.File("manifest.pb"), std::ios::binary | std::ios::trunc);
    ASSERT_TRUE(m.SerializeToOstream(&out));
  };
  proto::SavedDatasetManifest bad_dtype = good;
  bad_dtype.mutable_element_spec(1)->set_dtype(99);
  write(bad_dtype);
  EXPECT_FALSE(Dataset::Load(dir.path()).element_spec().known());
  auto no_spec = Collect(Dataset::Load(dir.path()));
  EXPECT_EQ(no_spec.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(no_spec.status().message(), HasSubstr(dir.File("manifest.pb")));
  EXPECT_THAT(no_spec.status().message(), HasSubstr("component 1 of the element_spec"));

  proto::SavedDatasetManifest bad_dim = good;
  bad_dim.mutable_element_spec(1)->set_dims(0, -2);
  write(bad_dim);
  EXPECT_EQ(Collect(Dataset::Load(dir.path())).status().code(), absl::StatusCode::kDataLoss);

  // Float32 vectors of 4 recorded, of 3 saved.
  proto::SavedDatasetManifest other = good;
  other.mutable_element_spec(1)->set_dims(0, 4);
  write(other);
  EXPECT_EQ(Dataset::Load(dir.path()).element_spec().DebugString(),
            "(int64[], float32[4], bytes[])");
  auto mismatch = Collect(Dataset::Load(dir.path()));
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(mismatch.status().message(), HasSubstr("record 0 is not"));

  proto::SavedDatasetManifest old = good;
  old.clear_element_spec_known();
  old.clear_element_spec();
  write(old);
  EXPECT_FALSE(Dataset::Load(dir.path()).element_spec().known());
  auto loaded = Collect(Dataset::Load(dir.path()));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->size(), 6u);
}

// LoadOptions::element_spec (tf.data's load(element_spec=)) is the dataset's without reading the
// directory; the saved elements must be compatible with it.
TEST(LoadTest, AGivenElementSpecMustBeCompatibleWithTheSavedOne) {
  ScopedTempDir dir;
  const ElementSpec general({{DType::kInt64, PartialShape{}},
                             {DType::kFloat32, PartialShape{PartialShape::kUnknownDim}},
                             {DType::kBytes, PartialShape{}}});
  const Dataset before = Dataset::Load(dir.path(), {.element_spec = general});
  EXPECT_EQ(before.element_spec().DebugString(), "(int64[], float32[?], bytes[])");
  ASSERT_TRUE(MixedDeclared(5).Save(dir.path()).ok());
  auto got = Collect(before);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), 5u);

  const ElementSpec wrong({{DType::kInt32, PartialShape{}}});
  auto refused = Collect(Dataset::Load(dir.path(), {.element_spec = wrong}));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("holds elements (int64[], float32[3], bytes[]), but this dataset's are "
                        "(int32[]) (LoadOptions::element_spec)"));
}

TEST(LoadTest, CheckpointsResumeExactly) {
  ScopedTempDir dir;
  ASSERT_TRUE(Mixed(30).Save(dir.path(), {.num_shards = 3}).ok());
  ExpectCheckpointsResumeExactly(Dataset::Load(dir.path()), {0, 1, 2, 3, 14, 29, 30});
  // A checkpoint of another run of the directory does not restore.
  auto it = Dataset::Load(dir.path()).MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  ASSERT_TRUE(Mixed(30).Save(dir.path(), {.num_shards = 3}).ok());
  absl::Status restored = Dataset::Load(dir.path()).MakeIterator()->Restore(*saved);
  EXPECT_EQ(restored.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(restored.message(), HasSubstr("rewritten since"));
}

// Sets every Interleave slot's saved input element (a shard number) to `shard`.
int SetSlotInputs(proto::IteratorStateProto* state, int64_t shard) {
  int changed = 0;
  auto blob = state->mutable_blobs()->find("input_element");
  if (blob != state->mutable_blobs()->end()) {
    proto::ElementProto e;
    ElementToProto({Tensor::Scalar<int64_t>(shard)}, &e);
    blob->second = e.SerializeAsString();
    ++changed;
  }
  for (auto& input : *state->mutable_inputs()) changed += SetSlotInputs(&input, shard);
  return changed;
}

// A checkpoint naming a shard the saved dataset does not have is refused, not followed (the
// iterator_restore fuzzer found the read past the shard list).
TEST(LoadTest, RestoreRefusesAShardThatDoesNotExist) {
  ScopedTempDir dir;
  // Shards longer than what Load's parallel Interleave reads ahead into a slot (64 small
  // elements): saved, each open slot still has its shard to read, so its input element.
  ASSERT_TRUE(Mixed(600).Save(dir.path(), {.num_shards = 3}).ok());
  const Dataset loaded = Dataset::Load(dir.path());
  auto it = loaded.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  proto::IteratorCheckpoint checkpoint;
  ASSERT_TRUE(checkpoint.ParseFromString(*saved));
  ASSERT_GT(SetSlotInputs(checkpoint.mutable_root(), 1000), 0);
  absl::Status restored = loaded.MakeIterator()->Restore(checkpoint.SerializeAsString());
  EXPECT_EQ(restored.code(), absl::StatusCode::kDataLoss) << restored;
  EXPECT_THAT(restored.message(), HasSubstr("no shard"));
}

}  // namespace
}  // namespace sluice
