// Checkpoints that save buffered elements as their sources (dataset/element_source.h): the
// checkpoint's size does not depend on the elements', and a restore recomputes them exactly.
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "absl/strings/str_cat.h"
#include "dataset/proto/iterator_state.pb.h"
#include "gtest/gtest.h"
#include "io/tfrecord_writer.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::ExpectCheckpointsResumeExactly;

// An element of `bytes` bytes that depends on the input value and the Map's seed, as a decoded
// and randomly augmented image does.
MapFn Widen(int64_t bytes) {
  return [bytes](Element e, const ElementContext& c) -> absl::StatusOr<Element> {
    Tensor wide(DType::kUint8, Shape{bytes});
    uint8_t* p = wide.data<uint8_t>();
    const uint64_t v = static_cast<uint64_t>(e.at(0).scalar<int64_t>());
    for (int64_t i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>((v * 131 + c.seed + i) >> 3);
    return Element{std::move(e[0]), std::move(wide)};
  };
}

// Buffered results in a checkpoint, by how they were saved.
struct Counts {
  int64_t sources = 0;
  int64_t elements = 0;
};
void CountBuffers(const proto::IteratorStateProto& state, Counts* counts) {
  for (const proto::BufferedResult& b : state.buffer()) {
    if (b.source_size() > 0) ++counts->sources;
    if (b.element().components_size() > 0) ++counts->elements;
  }
  for (const proto::IteratorStateProto& in : state.inputs()) CountBuffers(in, counts);
}
Counts CountCheckpoint(const std::string& checkpoint) {
  proto::IteratorCheckpoint ckpt;
  EXPECT_TRUE(ckpt.ParseFromString(checkpoint));
  Counts counts;
  CountBuffers(ckpt.root(), &counts);
  return counts;
}

// The checkpoint after `k` elements.
std::string SaveAfter(const Dataset& ds, int64_t k) {
  auto it = ds.MakeIterator();
  auto first = Drain(*it, k);
  EXPECT_TRUE(first.ok()) << first.status();
  auto saved = it->Save();
  EXPECT_TRUE(saved.ok()) << saved.status();
  return saved.ok() ? *saved : std::string();
}

Dataset WideShuffle(int64_t bytes, std::optional<bool> sources = std::nullopt) {
  Options options;
  options.seed = 5;
  options.checkpoint_sources = sources;
  return Dataset::Range(400)
      .Map(Widen(bytes), {.num_parallel_calls = 2})
      .Shuffle(100)
      .Prefetch(4)
      .WithOptions(options);
}

TEST(ElementSourceTest, AShuffleBufferIsSavedAsSourcesWhoseSizeIgnoresTheElements) {
  // Without the parallel stages (whose buffers fill as the threads run), the same positions
  // whatever the elements hold: a checkpoint of the same size.
  auto sequential = [](int64_t bytes) {
    return Dataset::Range(400).Map(Widen(bytes)).Shuffle(100).WithOptions({.seed = 2});
  };
  EXPECT_EQ(SaveAfter(sequential(16), 150).size(), SaveAfter(sequential(64 << 10), 150).size());

  // With them, a few KB for 100+ buffered elements of 64 KB.
  const std::string large = SaveAfter(WideShuffle(64 << 10), 150);
  EXPECT_LT(large.size(), 8u << 10);
  const Counts counts = CountCheckpoint(large);
  EXPECT_EQ(counts.elements, 0);
  EXPECT_GE(counts.sources, 99);  // the Shuffle's 99, and whatever the Map and Prefetch held

  // With sources off, the elements themselves: over 99 x 64 KB.
  const std::string whole = SaveAfter(WideShuffle(64 << 10, false), 150);
  EXPECT_GT(whole.size(), 99u * (64 << 10));
  EXPECT_EQ(CountCheckpoint(whole).sources, 0);
}

TEST(ElementSourceTest, RestoringRecomputesTheBufferExactly) {
  for (std::optional<bool> sources : {std::optional<bool>(), std::optional<bool>(false)}) {
    ExpectCheckpointsResumeExactly(WideShuffle(256, sources), {0, 1, 99, 150, 399, 400});
  }
}

TEST(ElementSourceTest, ElementsOfTwoRepetitionsAreRecomputedWithTheirOwnSeeds) {
  Options options;
  options.seed = 9;
  // The Map after Repeat sees each value once per repetition, with another seed; the one before
  // it draws from the repetition's salt. A shuffle across the boundary holds both epochs.
  const Dataset ds = Dataset::Range(30)
                         .Map(Widen(8))
                         .Repeat(3)
                         .Map(Widen(8), {.num_parallel_calls = 3})
                         .Shuffle(20)
                         .Batch(4)
                         .Prefetch(2)
                         .WithOptions(options);
  ExpectCheckpointsResumeExactly(ds, {0, 3, 7, 8, 15, 22});
  EXPECT_EQ(CountCheckpoint(SaveAfter(ds, 7)).elements, 0);
}

TEST(ElementSourceTest, AnInputThatCannotRecomputeIsSavedWhole) {
  // A generator has no positions: its elements are saved as they are, and still resume exactly.
  const Dataset ds = Dataset::FromGenerator([] {
                       auto next = std::make_shared<int64_t>(0);
                       return Generator([next]() -> absl::StatusOr<std::optional<Element>> {
                         if (*next == 50) return std::nullopt;
                         return Element{Tensor::Scalar<int64_t>((*next)++)};
                       });
                     }).Shuffle(10, {.seed = 3});
  ExpectCheckpointsResumeExactly(ds, {0, 5, 45});
  const Counts counts = CountCheckpoint(SaveAfter(ds, 5));
  EXPECT_EQ(counts.sources, 0);
  EXPECT_EQ(counts.elements, 9);  // the buffer refills at the next call
}

// TFRecord files read as `sluice bench` does: ListFiles -> Interleave(TFRecord) -> Map.
class ElementSourceFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("element_source_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    for (int f = 0; f < 4; ++f) Write(f, 25 + 5 * f);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(int f) const { return (dir_ / absl::StrCat("f", f, ".tfrecord")).string(); }
  void Write(int f, int records) {
    auto w = TFRecordWriter::Open(Path(f), {.sync = false});
    ASSERT_TRUE(w.ok()) << w.status();
    for (int i = 0; i < records; ++i) {
      // Records of different lengths, so that offsets differ from record numbers.
      ASSERT_TRUE((*w)->Write(absl::StrCat(f * 1000 + i, std::string(i % 7, 'x'))).ok());
    }
    ASSERT_TRUE((*w)->Close().ok());
  }

  Dataset Pipeline(int parallel) const {
    Options options;
    options.seed = 11;
    return Dataset::ListFiles((dir_ / "f*.tfrecord").string())
        .Interleave([](const std::string& file) { return Dataset::TFRecord(file); },
                    {.cycle_length = 3, .block_length = 2, .num_parallel_calls = parallel})
        .Map(
            [](Element e) -> absl::StatusOr<Element> {
              const std::string& record = e.at(0).scalar<std::string>();
              return Element{Tensor::Scalar<int64_t>(std::stoll(record.substr(0, 4)))};
            },
            {.num_parallel_calls = parallel})
        .Repeat(2)
        .Map(Widen(1 << 10), {.num_parallel_calls = parallel})
        .Shuffle(40)
        .Batch(3)
        .Prefetch(2)
        .WithOptions(options);
  }

  std::filesystem::path dir_;
};

TEST_F(ElementSourceFilesTest, ThePipelineOfSluiceBenchResumesFromSources) {
  for (int parallel : {1, 3}) {
    SCOPED_TRACE(absl::StrCat("parallel ", parallel));
    ExpectCheckpointsResumeExactly(Pipeline(parallel), {0, 1, 20, 50, 80, 100});
    const std::string saved = SaveAfter(Pipeline(parallel), 50);
    const Counts counts = CountCheckpoint(saved);
    // Parallel, an inner pipeline whose file has ended keeps its last records whole (nothing
    // is left to recompute them with): at most a slot buffer of small records each, 64 (these
    // files of 25-40 records are read to their ends at once). Sequential, none.
    EXPECT_LE(counts.elements, parallel == 1 ? 0 : 3 * 64);
    // The Shuffle's 39 (it refills at the next call), and whatever the Prefetch holds.
    EXPECT_GE(counts.sources, 39);
    // 39+ buffered elements of 1 KB each, saved in a few bytes each.
    EXPECT_LT(saved.size(), 16u << 10);
  }
}

TEST_F(ElementSourceFilesTest, AFileCutShortSinceTheCheckpointIsDataLossNamingIt) {
  const std::string saved = SaveAfter(Pipeline(1), 10);
  // Every record after the first few goes: the buffered ones cannot be read again.
  for (int f = 0; f < 4; ++f) Write(f, 2);
  auto fresh = Pipeline(1).MakeIterator();
  const absl::Status restored = fresh->Restore(saved);
  EXPECT_EQ(restored.code(), absl::StatusCode::kDataLoss) << restored;
  EXPECT_NE(restored.message().find(dir_.string()), std::string::npos) << restored;
}

TEST(ElementSourceTest, AMalformedSourceIsDataLossNotACrash) {
  const Dataset ds = WideShuffle(16);
  proto::IteratorCheckpoint ckpt;
  ASSERT_TRUE(ckpt.ParseFromString(SaveAfter(ds, 150)));
  // Find the Shuffle's state (under the Prefetch) and corrupt its buffered sources.
  proto::IteratorStateProto* state = ckpt.mutable_root();
  while (state->node().rfind("Shuffle", 0) != 0) {
    ASSERT_GT(state->inputs_size(), 0);
    state = state->mutable_inputs(0);
  }
  ASSERT_GT(state->buffer_size(), 0);
  for (int64_t bad : {int64_t{-1}, int64_t{400}, int64_t{1} << 62}) {
    for (auto& b : *state->mutable_buffer()) {
      if (b.source_size() > 0) b.set_source(b.source_size() - 1, bad);
    }
    auto fresh = ds.MakeIterator();
    EXPECT_EQ(fresh->Restore(ckpt.SerializeAsString()).code(), absl::StatusCode::kDataLoss);
  }
  // A source cut short, and one with integers left over.
  for (auto& b : *state->mutable_buffer()) b.clear_source();
  state->mutable_buffer(0)->add_source(1);  // the Map's index, then nothing for Range
  auto fresh = ds.MakeIterator();
  EXPECT_EQ(fresh->Restore(ckpt.SerializeAsString()).code(), absl::StatusCode::kDataLoss);
  state->mutable_buffer(0)->add_source(1);
  state->mutable_buffer(0)->add_source(1);
  fresh = ds.MakeIterator();
  EXPECT_EQ(fresh->Restore(ckpt.SerializeAsString()).code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace sluice
