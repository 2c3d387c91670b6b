#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dataset/dataset_base.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/atomic_file.h"
#include "io/tfrecord_reader.h"
#include "io/tfrecord_writer.h"
#include "tests/dataset/test_util.h"
#include "tests/file_util.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::Ints;
using ::sluice::testing::Iota;
using ::testing::HasSubstr;
using ::testing::Not;

using Calls = std::shared_ptr<std::atomic<int>>;

// Range(n) through a Map that counts its calls: how many elements were read from the input.
Dataset CountedRange(int64_t n, const Calls& calls) {
  return Dataset::Range(n).Map([calls](Element e) -> absl::StatusOr<Element> {
    ++*calls;
    return e;
  });
}

// Elements whose values depend on the pipeline seed (random when unset, so each pass differs):
// replaying them identically proves they came from the cache. Three components of three dtypes.
Dataset RandomElements(int64_t n, const Calls& calls) {
  return Dataset::Range(n).Map(
      [calls](Element e, const ElementContext& c) -> absl::StatusOr<Element> {
        ++*calls;
        const int64_t i = e[0].scalar<int64_t>();
        Tensor bytes(DType::kBytes, Shape{2});
        bytes.flat<std::string>()[0] = absl::StrCat("s", i);
        bytes.flat<std::string>()[1] = std::string(static_cast<size_t>(i % 5), '\0');
        return Element{Tensor::Scalar<int64_t>(static_cast<int64_t>(c.seed >> 1)), bytes,
                       Tensor::FromVector<float>({0.5f * i, -1.0f, 3.25f})};
      });
}

void ExpectSameElements(const std::vector<Element>& a, const std::vector<Element>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(ElementsEqual(a[i], b[i]))
        << i << ": " << ElementDebugString(a[i]) << " vs " << ElementDebugString(b[i]);
  }
}

std::vector<Element> MustCollect(const Dataset& ds) {
  auto out = Collect(ds);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Element>{};
}

int CountLines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// In memory

TEST(CacheTest, MemorySecondPassReplaysWithoutTouchingTheInput) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = RandomElements(20, calls).Cache();
  auto first = MustCollect(ds);
  EXPECT_EQ(*calls, 20);
  auto second = MustCollect(ds);
  EXPECT_EQ(*calls, 20);  // Not one input element read.
  ExpectSameElements(first, second);
  // Without the cache, another pass gives other values (so the check above has teeth).
  auto uncached = MustCollect(RandomElements(20, calls));
  ASSERT_EQ(uncached.size(), 20u);
  EXPECT_FALSE(ElementsEqual(uncached[0], first[0]));
}

TEST(CacheTest, MemoryReplayDoesNotEvenCreateTheInputIterator) {
  std::atomic<int> made{0};
  auto ds = Dataset::FromGenerator([&made]() -> Generator {
              ++made;
              auto i = std::make_shared<int64_t>(0);
              return [i]() -> absl::StatusOr<std::optional<Element>> {
                if (*i == 3) return std::nullopt;
                return std::optional<Element>(Element{Tensor::Scalar<int64_t>((*i)++)});
              };
            }).Cache();
  EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, 3));
  EXPECT_EQ(made, 1);
  EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, 3));
  EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, 3));
  EXPECT_EQ(made, 1);
}

TEST(CacheTest, MemoryEmptyInputIsCachedToo) {
  std::atomic<int> made{0};
  auto ds = Dataset::FromGenerator([&made]() -> Generator {
              ++made;
              return []() -> absl::StatusOr<std::optional<Element>> { return std::nullopt; };
            }).Cache();
  EXPECT_TRUE(MustCollect(ds).empty());
  EXPECT_TRUE(MustCollect(ds).empty());
  EXPECT_EQ(made, 1);
}

TEST(CacheTest, MemoryPartialFirstPassLeavesNoCache) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = CountedRange(10, calls).Cache();
  {
    auto it = ds.MakeIterator();
    auto part = Drain(*it, 4);
    ASSERT_TRUE(part.ok());
    EXPECT_EQ(Ints(*part), Iota(0, 4));
  }
  EXPECT_EQ(*calls, 4);
  {
    // All ten read, but the end not seen yet: still no cache.
    auto it = ds.MakeIterator();
    ASSERT_TRUE(Drain(*it, 10).ok());
  }
  EXPECT_EQ(*calls, 14);
  EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, 10));  // Reads the input again, to its end.
  EXPECT_EQ(*calls, 24);
  EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, 10));  // Now replayed.
  EXPECT_EQ(*calls, 24);
}

TEST(CacheTest, MemoryPassWithAnInputErrorLeavesNoCache) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto fail_once = std::make_shared<std::atomic<bool>>(true);
  auto ds = CountedRange(6, calls)
                .Map([fail_once](Element e) -> absl::StatusOr<Element> {
                  if (e[0].scalar<int64_t>() == 2 && fail_once->exchange(false)) {
                    return absl::UnavailableError("flaky read");
                  }
                  return e;
                })
                .Cache()
                .IgnoreErrors();
  // The pass goes on past the error (IgnoreErrors), to the end: five elements, no cache.
  EXPECT_EQ(Ints(MustCollect(ds)), std::vector<int64_t>({0, 1, 3, 4, 5}));
  EXPECT_EQ(*calls, 6);
  EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, 6));  // Read again; this time clean.
  EXPECT_EQ(*calls, 12);
  EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, 6));
  EXPECT_EQ(*calls, 12);
}

TEST(CacheTest, MemoryConcurrentPassesShareOneCompletedCache) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = CountedRange(50, calls).Cache();
  std::vector<std::thread> threads;
  std::vector<std::vector<int64_t>> got(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { got[t] = Ints(MustCollect(ds)); });
  }
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, Iota(0, 50));
  const int after = *calls;
  EXPECT_GE(after, 50);
  EXPECT_LE(after, 200);
  EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, 50));
  EXPECT_EQ(*calls, after);
}

TEST(CacheTest, InputErrorsPassThroughNamed) {
  auto ds = Dataset::Range(5)
                .Map([](Element e) -> absl::StatusOr<Element> {
                  if (e[0].scalar<int64_t>() == 3) return absl::InvalidArgumentError("bad");
                  return e;
                })
                .Cache();
  auto out = Collect(ds);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "Map[1] at element 3: bad");
}

TEST(CacheTest, EndOfSequenceRepeatsInBothModes) {
  auto ds = Dataset::Range(3).Cache();
  for (int pass = 0; pass < 2; ++pass) {  // Recording, then replaying.
    auto it = ds.MakeIterator();
    ASSERT_TRUE(Drain(*it).ok());
    for (int i = 0; i < 3; ++i) {
      auto e = it->GetNext();
      ASSERT_TRUE(e.ok());
      EXPECT_FALSE(e->has_value()) << "pass " << pass;
    }
  }
}

TEST(CacheTest, CardinalityDescriptionAndStats) {
  EXPECT_EQ(Dataset::Range(7).Cache().Cardinality(), 7);
  EXPECT_EQ(Dataset::Range(7).Cache().DebugString(), "Range(0, 7, 1) -> Cache");
  EXPECT_EQ(Dataset::Range(7).Cache("/x/y").DebugString(), "Range(0, 7, 1) -> Cache(/x/y)");
  auto ds = Dataset::Range(10).Cache();
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 4).ok());
  auto stats = it->Stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[1].name, "Cache[1]");
  EXPECT_EQ(stats[1].buffered_elements, 4);  // Recorded so far.
  EXPECT_EQ(stats[1].buffered_bytes, 4 * 8);
  ASSERT_TRUE(Drain(*it).ok());
  EXPECT_EQ(it->Stats()[1].buffered_elements, 10);
}

TEST(CacheTest, RepeatedCacheReadsTheInputOnce) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto out = MustCollect(RandomElements(5, calls).Cache().Repeat(3));
  EXPECT_EQ(*calls, 5);
  ASSERT_EQ(out.size(), 15u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(ElementsEqual(out[i], out[i + 5]));
    EXPECT_TRUE(ElementsEqual(out[i], out[i + 10]));
  }
}

TEST(CacheTest, MemoryCheckpointsWhileReplaying) {
  auto ds = Dataset::Range(12).Cache();
  ASSERT_EQ(MustCollect(ds).size(), 12u);  // Completes the cache: every iterator below replays.
  testing::ExpectCheckpointsResumeExactly(ds, {0, 1, 6, 11, 12});
}

TEST(CacheTest, MemoryCheckpointsWhileRecording) {
  // A fresh dataset per k, so that the pass saved is the one recording.
  for (int64_t k : {0, 1, 5, 9, 10}) {
    auto calls = std::make_shared<std::atomic<int>>(0);
    auto ds = CountedRange(10, calls).Cache();
    auto it = ds.MakeIterator();
    auto first = Drain(*it, k);
    ASSERT_TRUE(first.ok());
    auto saved = it->Save();
    ASSERT_TRUE(saved.ok()) << saved.status();
    it.reset();
    // Restored in another dataset object (as in another process): the recording so far came
    // with the checkpoint, so this pass still completes the cache.
    auto calls2 = std::make_shared<std::atomic<int>>(0);
    auto ds2 = CountedRange(10, calls2).Cache();
    auto fresh = ds2.MakeIterator();
    ASSERT_TRUE(fresh->Restore(*saved).ok()) << "k=" << k;
    auto rest = Drain(*fresh);
    ASSERT_TRUE(rest.ok());
    std::vector<int64_t> all = Ints(*first);
    for (int64_t v : Ints(*rest)) all.push_back(v);
    EXPECT_EQ(all, Iota(0, 10)) << "k=" << k;
    EXPECT_EQ(*calls2, 10 - k) << "k=" << k;  // Only the rest was read.
    EXPECT_EQ(Ints(MustCollect(ds2)), Iota(0, 10)) << "k=" << k;
    EXPECT_EQ(*calls2, 10 - k) << "k=" << k;  // Replayed: complete.
    EXPECT_EQ(*calls, k) << "k=" << k;        // The first dataset has no cache.
  }
}

TEST(CacheTest, MemoryReplayCheckpointRestoresInAnotherDatasetWithoutTheInput) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = RandomElements(8, calls).Cache();
  auto full = MustCollect(ds);
  auto it = ds.MakeIterator();
  auto first = Drain(*it, 3);
  ASSERT_TRUE(first.ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  auto calls2 = std::make_shared<std::atomic<int>>(0);
  auto ds2 = RandomElements(8, calls2).Cache();
  auto fresh = ds2.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto rest = Drain(*fresh);
  ASSERT_TRUE(rest.ok());
  ExpectSameElements(*rest, std::vector<Element>(full.begin() + 3, full.end()));
  ExpectSameElements(MustCollect(ds2), full);  // Its cache now holds the checkpoint's.
  EXPECT_EQ(*calls2, 0);
}

TEST(CacheTest, MemoryRecordingCheckpointRestoresIntoAReplayingIterator) {
  // Saved while recording; meanwhile another pass completed the cache. The restored iterator
  // goes on with its own input, exactly.
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = CountedRange(6, calls).Cache();
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 2).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  it.reset();
  EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, 6));
  EXPECT_EQ(*calls, 8);
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto rest = Drain(*fresh);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(Ints(*rest), Iota(2, 6));
  EXPECT_EQ(*calls, 12);
}

// An internal iterator with its own context: observes the iterator after an error.
struct CacheInternal {
  explicit CacheInternal(const Dataset& ds) : base(ds.base()) {
    ctx.runtime = std::make_shared<Runtime>(2);
    ctx.cancellation = std::make_shared<CancellationManager>();
    ctx.stats = std::make_shared<StatsRegistry>();
  }
  std::unique_ptr<IteratorBase> Make() {
    auto it = base->MakeIterator(ctx);
    EXPECT_TRUE(it.ok()) << it.status();
    return std::move(*it);
  }
  IteratorContext ctx;
  std::shared_ptr<const DatasetBase> base;
};

TEST(CacheTest, MemoryCheckpointAfterAnInputErrorStillRecordsNothing) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = CountedRange(5, calls)
                .Map([](Element e) -> absl::StatusOr<Element> {
                  if (e[0].scalar<int64_t>() == 1) return absl::UnavailableError("flaky");
                  return e;
                })
                .Cache();
  CacheInternal internal(ds);
  auto it = internal.Make();
  ASSERT_TRUE(it->GetNext().ok());
  ASSERT_FALSE(it->GetNext().ok());
  proto::IteratorStateProto state;
  ASSERT_TRUE(it->Save(&state).ok());
  EXPECT_EQ(state.buffer_size(), 0);
  auto fresh = internal.Make();
  ASSERT_TRUE(fresh->Restore(state).ok());
  int n = 0;
  while (true) {
    auto e = fresh->GetNext();
    ASSERT_TRUE(e.ok());
    if (!e->has_value()) break;
    ++n;
  }
  EXPECT_EQ(n, 3);
  EXPECT_EQ(*calls, 5);
  auto again = internal.Make();  // No cache: a new iterator reads the input.
  ASSERT_TRUE(again->GetNext().ok());
  EXPECT_EQ(*calls, 6);
}

// ---------------------------------------------------------------------------------------------
// In a file

class FileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           absl::StrCat("sluice_cache_test_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "cache").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The cache file's records, to tamper with one, and the file written back from them.
  void ReadRecords(std::vector<std::string>& records) const {
    auto reader = TFRecordReader::Open(path_);
    ASSERT_TRUE(reader.ok());
    std::string r;
    while (*(*reader)->ReadRecord(&r)) records.push_back(r);
  }
  void WriteRecords(const std::vector<std::string>& records) const {
    auto writer = TFRecordWriter::Open(path_, {.sync = false});
    ASSERT_TRUE(writer.ok());
    for (const std::string& r : records) ASSERT_TRUE((*writer)->Write(r).ok());
    ASSERT_TRUE((*writer)->Close().ok());
  }

  std::vector<std::string> TempFiles() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("cache.tmp.", 0) == 0) out.push_back(name);
    }
    return out;
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(FileCacheTest, SurvivesInANewDatasetObject) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto first = MustCollect(RandomElements(30, calls).Cache(path_));
  EXPECT_EQ(*calls, 30);
  ASSERT_TRUE(fs::exists(path_));
  EXPECT_TRUE(TempFiles().empty());
  // A new dataset object, as another process would build: reads the file, not the input.
  auto calls2 = std::make_shared<std::atomic<int>>(0);
  ::testing::internal::CaptureStderr();
  auto second = MustCollect(RandomElements(30, calls2).Cache(path_));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(*calls2, 0);
  ExpectSameElements(first, second);
  // And again from the same object: the file each time.
  auto ds = RandomElements(30, calls2).Cache(path_);
  ExpectSameElements(MustCollect(ds), first);
  ExpectSameElements(MustCollect(ds), first);
  EXPECT_EQ(*calls2, 0);
}

TEST_F(FileCacheTest, EmptyInput) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  EXPECT_TRUE(MustCollect(CountedRange(0, calls).Cache(path_)).empty());
  ASSERT_TRUE(fs::exists(path_));
  EXPECT_TRUE(MustCollect(CountedRange(0, calls).Cache(path_)).empty());
}

TEST_F(FileCacheTest, TheFinalPathAppearsOnlyWhenTheInputEnded) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = CountedRange(10, calls).Cache(path_);
  {
    auto it = ds.MakeIterator();
    ASSERT_TRUE(Drain(*it, 10).ok());
    EXPECT_FALSE(fs::exists(path_));
    EXPECT_EQ(TempFiles().size(), 1u);  // Written beside it.
  }
  // Abandoned mid-pass: the temporary file is gone, and nothing is at the path.
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_TRUE(TempFiles().empty());
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 10).ok());
  EXPECT_FALSE(fs::exists(path_));
  auto end = it->GetNext();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
  EXPECT_TRUE(fs::exists(path_));
  EXPECT_TRUE(TempFiles().empty());
  EXPECT_EQ(*calls, 20);
  EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, 10));
  EXPECT_EQ(*calls, 20);
}

TEST_F(FileCacheTest, PassWithAnInputErrorWritesNothing) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto fail_once = std::make_shared<std::atomic<bool>>(true);
  auto ds = CountedRange(6, calls)
                .Map([fail_once](Element e) -> absl::StatusOr<Element> {
                  if (e[0].scalar<int64_t>() == 2 && fail_once->exchange(false)) {
                    return absl::UnavailableError("flaky read");
                  }
                  return e;
                })
                .Cache(path_)
                .IgnoreErrors();
  EXPECT_EQ(Ints(MustCollect(ds)), std::vector<int64_t>({0, 1, 3, 4, 5}));
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_TRUE(TempFiles().empty());
  EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, 6));
  EXPECT_TRUE(fs::exists(path_));
  EXPECT_EQ(*calls, 12);
}

// The byte offset of each record of a TFRecord-framed file, and of its end.
std::vector<uint64_t> RecordOffsets(const std::string& path) {
  const std::string bytes = testing::ReadFile(path);
  std::vector<uint64_t> out;
  uint64_t at = 0;
  while (at + 12 <= bytes.size()) {
    out.push_back(at);
    uint64_t length = 0;
    std::memcpy(&length, bytes.data() + at, 8);  // Little-endian hosts only, like the tests.
    at += 12 + length + 4;
  }
  out.push_back(at);
  return out;
}

// Writes a complete cache of Range(n) at `path`.
void WriteCache(const std::string& path, int64_t n) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  ASSERT_EQ(MustCollect(CountedRange(n, calls).Cache(path)).size(), static_cast<size_t>(n));
  ASSERT_TRUE(fs::exists(path));
}

// Reads CountedRange(n).Cache(path) in a new dataset, capturing stderr; returns (calls, stderr).
std::pair<int, std::string> ReadCache(const std::string& path, int64_t n) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  ::testing::internal::CaptureStderr();
  auto out = MustCollect(CountedRange(n, calls).Cache(path));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(Ints(out), Iota(0, n));
  return {calls->load(), err};
}

TEST_F(FileCacheTest, TruncatedFileIsDiscardedWithOneWarningAndRebuilt) {
  WriteCache(path_, 20);
  const auto size = fs::file_size(path_);
  const auto offsets = RecordOffsets(path_);
  ASSERT_EQ(offsets.size(), 1u + 20u + 1u + 1u);  // header, elements, end record, file end
  ASSERT_EQ(offsets.back(), size);
  const uint64_t header_end = offsets[1];
  for (uintmax_t keep :
       {size - 1, size - 48, size / 2, uintmax_t{30}, uintmax_t{5}, uintmax_t{0}}) {
    fs::resize_file(path_, keep);
    auto [calls, err] = ReadCache(path_, 20);
    EXPECT_EQ(calls, 20) << "kept " << keep;  // Read the input again...
    EXPECT_EQ(CountLines(err, "warning"), 1) << err;
    EXPECT_THAT(err, HasSubstr(absl::StrCat("Cache[2]: discarded cache file ", path_)));
    EXPECT_THAT(err, HasSubstr(keep >= header_end ? "incomplete" : "not a sluice cache file"))
        << err;
    EXPECT_EQ(fs::file_size(path_), size) << "kept " << keep;  // ...and rebuilt the file,
    auto [calls2, err2] = ReadCache(path_, 20);
    EXPECT_EQ(calls2, 0);  // which is good again.
    EXPECT_EQ(err2, "");
  }
}

TEST_F(FileCacheTest, FileOfAnotherPipelineIsDiscardedWithOneWarningAndRebuilt) {
  WriteCache(path_, 10);
  auto [calls, err] = ReadCache(path_, 12);
  EXPECT_EQ(calls, 12);
  EXPECT_EQ(CountLines(err, "warning"), 1) << err;
  EXPECT_THAT(err, HasSubstr(absl::StrCat(
                       "discarded cache file ", path_,
                       ": it was written by pipeline \"Range(0, 10, 1) -> Map\", this one is "
                       "\"Range(0, 12, 1) -> Map\"; reading the input again")));
  auto [calls2, err2] = ReadCache(path_, 12);
  EXPECT_EQ(calls2, 0);
  EXPECT_EQ(err2, "");
}

// The header names the input files with their sizes and modification times: a TFRecord
// source's DebugString holds its file count only, so a cache of a.tfrecord was replayed for
// b.tfrecord, and one of a file since rewritten was replayed as it was.
TEST_F(FileCacheTest, ACacheOfOtherOrChangedInputFilesIsRebuilt) {
  const auto write = [](const std::string& path, const std::vector<std::string>& records) {
    auto writer = TFRecordWriter::Open(path, {.sync = false});
    ASSERT_TRUE(writer.ok());
    for (const std::string& r : records) ASSERT_TRUE((*writer)->Write(r).ok());
    ASSERT_TRUE((*writer)->Close().ok());
  };
  const auto read = [&](const std::string& file, std::string& err) {
    ::testing::internal::CaptureStderr();
    auto got = Collect(Dataset::TFRecord(file).Cache(path_));
    err = ::testing::internal::GetCapturedStderr();
    std::vector<std::string> records;
    if (!got.ok()) return std::vector<std::string>{got.status().ToString()};
    for (const Element& e : *got) records.push_back(e[0].scalar<std::string>());
    return records;
  };
  const std::string a = (dir_ / "a.tfrecord").string(), b = (dir_ / "b.tfrecord").string();
  write(a, {"a0", "a1"});
  write(b, {"b0", "b1"});
  std::string err;
  EXPECT_THAT(read(a, err), ::testing::ElementsAre("a0", "a1"));
  EXPECT_EQ(err, "");
  EXPECT_THAT(read(a, err), ::testing::ElementsAre("a0", "a1"));  // from the cache
  EXPECT_EQ(err, "");
  EXPECT_THAT(read(b, err), ::testing::ElementsAre("b0", "b1"));
  EXPECT_THAT(err, HasSubstr(absl::StrCat("discarded cache file ", path_, ": input file ", b,
                                          " is new; reading the input again")));
  write(b, {"b0", "b1", "b2"});
  EXPECT_THAT(read(b, err), ::testing::ElementsAre("b0", "b1", "b2"));
  EXPECT_THAT(err, HasSubstr(absl::StrCat("input file ", b, " changed")));
  EXPECT_THAT(read(b, err), ::testing::ElementsAre("b0", "b1", "b2"));
  EXPECT_EQ(err, "");
}

// An element larger than a record may hold is passed on, and the cache is not written (with a
// warning): it was written, then refused when read back and removed, at every epoch.
TEST_F(FileCacheTest, AnElementTooLargeForARecordIsPassedOnUncached) {
  const Tensor huge(DType::kUint8, Shape{(int64_t{1} << 30) + 1});  // pages never touched
  ::testing::internal::CaptureStderr();
  auto got = Collect(Dataset::FromTensors({huge}).Cache(path_));
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0][0].num_elements(), huge.num_elements());
  EXPECT_THAT(err, HasSubstr("cannot write cache file"));
  EXPECT_THAT(err, HasSubstr("over the 1073741824 bytes a record may hold"));
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_THAT(TempFiles(), ::testing::IsEmpty());
}

TEST_F(FileCacheTest, GarbageFileIsDiscardedWithOneWarning) {
  std::ofstream(path_) << "this is not a cache file at all, but it is long enough to look at";
  auto [calls, err] = ReadCache(path_, 4);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(CountLines(err, "warning"), 1) << err;
  EXPECT_THAT(err, HasSubstr("not a sluice cache file"));
  EXPECT_EQ(ReadCache(path_, 4).first, 0);
}

TEST_F(FileCacheTest, LeftoverTemporaryFilesOfGoneWritersAreRemovedWithAWarning) {
  // A writer process of this host that no longer exists (no pid is this large), one of this
  // process that no writer here owns, and one of another host unchanged for two hours: all
  // leftovers. A file of a live process (pid 1) is left alone, so is a fresh one of another host
  // (a cache on shared storage: its pid says nothing here), and so is a name that is not a
  // temporary name of ours. Names without a host (older versions) are looked up by pid.
  const std::string host = AtomicFileHostTag();
  const std::string dead = path_ + ".tmp.999999999.0." + host;
  const std::string dead_untagged = path_ + ".tmp.999999998.0";
  const std::string ours = absl::StrCat(path_, ".tmp.", ::getpid(), ".77777.", host);
  const std::string stale_elsewhere = path_ + ".tmp.999999999.1.0badc0de-42";
  const std::string live = path_ + ".tmp.1.0." + host;
  const std::string fresh_elsewhere = path_ + ".tmp.1.1.0badc0de-42";
  const std::string other = path_ + ".tmp.notes";
  for (const auto& f : {dead, dead_untagged, ours, stale_elsewhere, live, fresh_elsewhere, other}) {
    std::ofstream(f) << "partial";
  }
  fs::last_write_time(stale_elsewhere, fs::file_time_type::clock::now() - std::chrono::hours(2));
  auto [calls, err] = ReadCache(path_, 5);
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(CountLines(err, "warning"), 4) << err;
  for (const auto& f : {dead, dead_untagged, ours, stale_elsewhere}) {
    EXPECT_THAT(err, HasSubstr("removed leftover temporary cache file " + f));
    EXPECT_FALSE(fs::exists(f)) << f;
  }
  EXPECT_THAT(err, HasSubstr("on another machine, unchanged for an hour"));
  for (const auto& f : {live, fresh_elsewhere, other}) EXPECT_TRUE(fs::exists(f)) << f;
  EXPECT_TRUE(fs::exists(path_));
}

TEST_F(FileCacheTest, ALiveWriterInThisProcessKeepsItsTemporaryFile) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = CountedRange(6, calls).Cache(path_);
  auto writer = ds.MakeIterator();
  ASSERT_TRUE(Drain(*writer, 3).ok());
  ASSERT_EQ(TempFiles().size(), 1u);
  // Another pass starts meanwhile: it must not take the first one's file for a leftover.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, 6));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  auto rest = Drain(*writer);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(Ints(*rest), Iota(3, 6));
  EXPECT_TRUE(TempFiles().empty());
  EXPECT_EQ(ReadCache(path_, 6).first, 0);
}

TEST_F(FileCacheTest, CorruptRecordIsAnErrorAndTheFileIsRebuiltNextPass) {
  WriteCache(path_, 10);
  {
    // Flip a byte inside element 5's record (record 6); header and end record stay valid.
    const uint64_t at = RecordOffsets(path_)[6] + 12 + 3;
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    const char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(at));
    f.put(static_cast<char>(c ^ 0x40));
  }
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = CountedRange(10, calls).Cache(path_);
  auto it = ds.MakeIterator();
  auto got = Drain(*it);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(), HasSubstr("Cache[2] at element 5: corrupt cache file: "));
  EXPECT_THAT(got.status().message(), HasSubstr(path_ + ": record 6 at offset "));
  EXPECT_THAT(got.status().message(), HasSubstr("the next pass reads the input again"));
  EXPECT_EQ(*calls, 0);
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, 10));
  EXPECT_EQ(*calls, 10);
  EXPECT_EQ(ReadCache(path_, 10).first, 0);
}

// Found by file_cache_fuzzer: an element record whose CRC is valid but whose tensor claims a
// shape far larger than its bytes made ElementFromProto allocate the claimed 2^61 bytes first.
TEST_F(FileCacheTest, ElementClaimingAHugeShapeIsAnErrorWithoutAllocatingIt) {
  WriteCache(path_, 10);
  std::vector<std::string> records;
  ASSERT_NO_FATAL_FAILURE(ReadRecords(records));
  ASSERT_EQ(records.size(), 12u);  // header, 10 elements, end record
  proto::ElementProto huge;
  ASSERT_TRUE(huge.ParseFromString(records[6]));
  huge.mutable_components(0)->add_shape(int64_t{1} << 58);  // int64 scalar -> [2^58], 8 bytes
  records[6] = huge.SerializeAsString();
  ASSERT_NO_FATAL_FAILURE(WriteRecords(records));
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto it = CountedRange(10, calls).Cache(path_).MakeIterator();
  auto got = Drain(*it);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(),
              HasSubstr(path_ + ": record 6: saved int64[288230376151711744] tensor holds 8 "
                                "bytes, expected 2305843009213693952"));
  EXPECT_EQ(*calls, 0);
}

// A cache file holds whatever its records say; elements of another type than the input's
// element_spec are no cache of it.
TEST_F(FileCacheTest, ElementOfAnotherTypeThanTheInputsSpecIsDataLoss) {
  WriteCache(path_, 10);
  std::vector<std::string> records;
  ASSERT_NO_FATAL_FAILURE(ReadRecords(records));
  ASSERT_EQ(records.size(), 12u);  // header, 10 elements, end record
  proto::ElementProto e;
  ElementToProto({Tensor::Scalar<float>(1)}, &e);
  records[6] = e.SerializeAsString();
  ASSERT_NO_FATAL_FAILURE(WriteRecords(records));
  // The same pipeline (a declaration is not part of its description), its Map declared.
  auto calls = std::make_shared<std::atomic<int>>(0);
  const Dataset declared = Dataset::Range(10).Map(
      [calls](Element e) -> absl::StatusOr<Element> {
        ++*calls;
        return e;
      },
      {.output_signature = {{DType::kInt64, {}}}});
  auto it = declared.Cache(path_).MakeIterator();
  auto got = Drain(*it);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(),
              HasSubstr(path_ + ": record 6: component 0 is float32[], expected int64[]"));
  EXPECT_EQ(*calls, 0);
}

// Makes the next read(2) of `it`'s cache file fail (EISDIR): the reader's descriptor is swapped
// for a directory's under it. `it` has returned an element, so the file is open.
void FailTheNextRead(const std::string& path, const std::string& dir) {
  const fs::path file = fs::canonical(path);
  int reader_fd = -1;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(e.path(), ec) == file) reader_fd = std::stoi(e.path().filename());
  }
  ASSERT_GE(reader_fd, 0) << "no descriptor open on " << file;
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dir_fd, 0);
  ASSERT_EQ(::dup2(dir_fd, reader_fd), reader_fd);
  ::close(dir_fd);
}

// A read error that is not corruption (an I/O error) says nothing about the file's bytes: the
// replay ends with the error, naming the file, and the file stays for the next pass, unless the
// replay before failed so too (a bad sector would otherwise cut every pass short): then it goes,
// and the pass after rebuilds it. A whole replay in between starts the count again.
TEST_F(FileCacheTest, AnIOErrorWhileReplayingKeepsTheFileOnceInARow) {
  // Over a megabyte, so that the reader's 256 KiB buffer must go back to the file.
  constexpr int64_t kN = 40000;
  WriteCache(path_, kN);
  ASSERT_GT(fs::file_size(path_), size_t{1} << 20);
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = CountedRange(kN, calls).Cache(path_);
  // One pass that fails on a read after its first element: the error.
  auto failing_pass = [&]() -> absl::Status {
    auto it = ds.MakeIterator();
    auto first = it->GetNext();
    EXPECT_TRUE(first.ok() && first->has_value());
    FailTheNextRead(path_, dir_.string());
    auto got = Drain(*it);
    EXPECT_FALSE(got.ok());
    // The pass ended (IgnoreErrors downstream would otherwise spin on the sticky error).
    auto after = it->GetNext();
    EXPECT_TRUE(!after.ok() || !after->has_value());
    return got.status();
  };
  for (int round = 0; round < 2; ++round) {  // a whole replay between two failures
    const absl::Status kept = failing_pass();
    EXPECT_NE(kept.code(), absl::StatusCode::kDataLoss) << kept;
    // At the element past the reader's buffer.
    EXPECT_THAT(std::string(kept.message()),
                HasSubstr("reading cache file " + path_ + " at element "));
    EXPECT_THAT(std::string(kept.message()), HasSubstr(" (kept: the next pass reads it again"));
    ASSERT_TRUE(fs::exists(path_));
    EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, kN));
    EXPECT_EQ(*calls, 0);  // replayed the kept file
  }
  ASSERT_FALSE(failing_pass().ok());
  const absl::Status removed = failing_pass();                        // two in a row
  EXPECT_NE(removed.code(), absl::StatusCode::kDataLoss) << removed;  // the read's own error
  EXPECT_THAT(std::string(removed.message()),
              HasSubstr(" (the second pass in a row to fail: removed it, the next pass reads the "
                        "input again): "));
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, kN));
  EXPECT_EQ(*calls, kN);  // rebuilt
  EXPECT_TRUE(fs::exists(path_));
}

TEST_F(FileCacheTest, CorruptRecordEndsTheInternalIterator) {
  // After the error the pass ends (IgnoreErrors downstream would otherwise spin forever).
  WriteCache(path_, 4);
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    const auto size = fs::file_size(path_);
    f.seekp(static_cast<std::streamoff>(size - 48 - 2));  // The last element's data CRC.
    f.put('\x55');
  }
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto out = MustCollect(CountedRange(4, calls).Cache(path_).IgnoreErrors());
  EXPECT_EQ(Ints(out), Iota(0, 3));
  EXPECT_EQ(*calls, 0);
}

TEST_F(FileCacheTest, UnwritablePathWarnsAndGoesOnWithoutCaching) {
  const std::string bad = "/proc/sluice_no_such_dir/cache";
  auto calls = std::make_shared<std::atomic<int>>(0);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Ints(MustCollect(CountedRange(5, calls).Cache(bad))), Iota(0, 5));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(CountLines(err, "warning"), 1) << err;
  EXPECT_THAT(err, HasSubstr("Cache[2]: cannot write cache file " + bad));
  EXPECT_THAT(err, HasSubstr("going on without caching"));
}

TEST_F(FileCacheTest, CheckpointsWhileReading) {
  WriteCache(path_, 15);
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = CountedRange(15, calls).Cache(path_);
  testing::ExpectCheckpointsResumeExactly(ds, {0, 1, 7, 14, 15});
  EXPECT_EQ(*calls, 0);
}

TEST_F(FileCacheTest, CheckpointsWhileWriting) {
  for (int64_t k : {0, 1, 6, 11, 12}) {
    fs::remove(path_);
    auto calls = std::make_shared<std::atomic<int>>(0);
    auto ds = CountedRange(12, calls).Cache(path_);
    auto it = ds.MakeIterator();
    auto first = Drain(*it, k);
    ASSERT_TRUE(first.ok());
    auto saved = it->Save();
    ASSERT_TRUE(saved.ok()) << saved.status();
    it.reset();
    EXPECT_TRUE(TempFiles().empty());
    auto fresh = CountedRange(12, calls).Cache(path_).MakeIterator();
    ASSERT_TRUE(fresh->Restore(*saved).ok()) << "k=" << k;
    auto rest = Drain(*fresh);
    ASSERT_TRUE(rest.ok()) << rest.status();
    std::vector<int64_t> all = Ints(*first);
    for (int64_t v : Ints(*rest)) all.push_back(v);
    EXPECT_EQ(all, Iota(0, 12)) << "k=" << k;
    EXPECT_EQ(*calls, 12) << "k=" << k;
    // A pass restored at its start still writes the cache; one restored later cannot (the
    // elements before the checkpoint are in no file), and the next pass writes it.
    EXPECT_EQ(fs::exists(path_), k == 0) << "k=" << k;
    EXPECT_TRUE(TempFiles().empty());
    EXPECT_EQ(Ints(MustCollect(ds)), Iota(0, 12));
    EXPECT_TRUE(fs::exists(path_));
    EXPECT_EQ(ReadCache(path_, 12).first, 0);
  }
}

TEST_F(FileCacheTest, WritingCheckpointRestoresIntoAReadingIterator) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = CountedRange(8, calls).Cache(path_);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 3).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  it.reset();
  WriteCache(path_, 8);  // The file exists now: a fresh iterator would read it.
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto rest = Drain(*fresh);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(Ints(*rest), Iota(3, 8));
  EXPECT_EQ(*calls, 3 + 5);
}

TEST_F(FileCacheTest, ReadingCheckpointFailsClearlyWhenTheFileChanged) {
  WriteCache(path_, 8);
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = CountedRange(8, calls).Cache(path_);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 3).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  it.reset();
  fs::remove(path_);
  WriteCache(path_, 8);  // Same pipeline, same contents, but another file.
  auto fresh = ds.MakeIterator();
  auto s = fresh->Restore(*saved);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("Cache[2]: the checkpoint was reading cache file " + path_ +
                                     " at element 3, but it was rewritten since"));
  fs::remove(path_);
  auto fresh2 = ds.MakeIterator();
  s = fresh2->Restore(*saved);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("but it does not exist"));
}

TEST_F(FileCacheTest, RepeatWritesOnceThenReads) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto out = MustCollect(CountedRange(4, calls).Cache(path_).Repeat(3));
  std::vector<int64_t> want;
  for (int r = 0; r < 3; ++r) {
    for (int64_t i = 0; i < 4; ++i) want.push_back(i);
  }
  EXPECT_EQ(Ints(out), want);
  EXPECT_EQ(*calls, 4);
}

}  // namespace
}  // namespace sluice
