#include <limits>
#include <string>
#include <vector>

#include "dataset/proto/iterator_state.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::ExpectCheckpointsResumeExactly;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Each window's first component as a list of ints.
std::vector<std::vector<int64_t>> Windows(const Dataset& ds) {
  auto elements = Collect(ds);
  EXPECT_TRUE(elements.ok()) << elements.status();
  std::vector<std::vector<int64_t>> out;
  if (!elements.ok()) return out;
  for (const Element& e : *elements) {
    EXPECT_EQ(e[0].rank(), 1);
    out.emplace_back(e[0].data<int64_t>(), e[0].data<int64_t>() + e[0].num_elements());
  }
  return out;
}

using W = std::vector<int64_t>;

// A span or shift past the int64 limits (a window of "everything") is no wrap-around.
TEST(WindowTest, HugeSizesAndShiftsDoNotOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_THAT(Windows(Dataset::Range(5).Window(kMax, {.stride = 2})), ElementsAre(W{0, 2, 4}));
  EXPECT_THAT(Windows(Dataset::Range(5).Window(2, {.shift = kMax})), ElementsAre(W{0, 1}));
  EXPECT_THAT(Windows(Dataset::Range(5).Window(kMax, {.drop_remainder = true})), ElementsAre());
}

TEST(WindowTest, TumblingWindowsByDefault) {
  EXPECT_THAT(Windows(Dataset::Range(7).Window(3)), ElementsAre(W{0, 1, 2}, W{3, 4, 5}, W{6}));
  EXPECT_THAT(Windows(Dataset::Range(7).Window(3, {.drop_remainder = true})),
              ElementsAre(W{0, 1, 2}, W{3, 4, 5}));
  EXPECT_THAT(Windows(Dataset::Range(0).Window(3)), ElementsAre());
}

// As tf.data: range(7).window(3, shift=1) and window(2, shift=1, stride=2), every window (the
// last ones shorter), and a shift past the span skipping elements.
TEST(WindowTest, ShiftAndStrideAsTfData) {
  EXPECT_THAT(
      Windows(Dataset::Range(7).Window(3, {.shift = 1})),
      ElementsAre(W{0, 1, 2}, W{1, 2, 3}, W{2, 3, 4}, W{3, 4, 5}, W{4, 5, 6}, W{5, 6}, W{6}));
  EXPECT_THAT(Windows(Dataset::Range(7).Window(2, {.shift = 1, .stride = 2})),
              ElementsAre(W{0, 2}, W{1, 3}, W{2, 4}, W{3, 5}, W{4, 6}, W{5}, W{6}));
  EXPECT_THAT(
      Windows(Dataset::Range(7).Window(2, {.shift = 1, .stride = 2, .drop_remainder = true})),
      ElementsAre(W{0, 2}, W{1, 3}, W{2, 4}, W{3, 5}, W{4, 6}));
  EXPECT_THAT(Windows(Dataset::Range(10).Window(2, {.shift = 4})),
              ElementsAre(W{0, 1}, W{4, 5}, W{8, 9}));
}

// len() of a window dataset: its cardinality is the count of the windows it yields, for every
// size, shift, stride and drop_remainder over inputs of 0 to 12 elements.
TEST(WindowTest, CardinalityCountsTheWindows) {
  for (int64_t n = 0; n <= 12; ++n) {
    for (int64_t size = 1; size <= 4; ++size) {
      for (int64_t shift = 1; shift <= 5; ++shift) {
        for (int64_t stride = 1; stride <= 3; ++stride) {
          for (bool drop : {false, true}) {
            const Dataset ds = Dataset::Range(n).Window(
                size, {.shift = shift, .stride = stride, .drop_remainder = drop});
            ASSERT_EQ(ds.Cardinality(), static_cast<int64_t>(Windows(ds).size()))
                << "n=" << n << " size=" << size << " shift=" << shift << " stride=" << stride
                << " drop=" << drop;
          }
        }
      }
    }
  }
  EXPECT_EQ(Dataset::Range(3).Repeat().Window(2).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Dataset::Range(3).Filter([](const Element&) { return true; }).Window(2).Cardinality(),
            kUnknownCardinality);
}

TEST(WindowTest, StacksEveryComponentAndNamesAMismatch) {
  const Dataset pairs = Dataset::Zip(
      {Dataset::Range(5), Dataset::Range(5).Map([](Element e) -> absl::StatusOr<Element> {
         return Element{Tensor::FromVector<float>({static_cast<float>(e[0].scalar<int64_t>()), 1})};
       })});
  auto windows = Collect(pairs.Window(2));
  ASSERT_TRUE(windows.ok()) << windows.status();
  ASSERT_EQ(windows->size(), 3u);
  EXPECT_EQ((*windows)[1][1].shape(), Shape({2, 2}));
  EXPECT_EQ((*windows)[1][1].data<float>()[2], 3.0f);
  // Elements of growing length cannot be stacked.
  const Dataset ragged = Dataset::Range(4).Map([](Element e) -> absl::StatusOr<Element> {
    return Element{Tensor(DType::kInt64, Shape{e[0].scalar<int64_t>()})};
  });
  auto it = ragged.Window(2).MakeIterator();
  auto bad = it->GetNext();
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("Window[2]: the elements of window 0 differ"));
  // The bad window is passed: IgnoreErrors drops it and the pipeline ends (it used to fail on the
  // same window for ever, a hang the iterator_restore fuzzer found).
  const Dataset mixed = Dataset::Range(6).Map([](Element e) -> absl::StatusOr<Element> {
    return Element{Tensor(DType::kInt64, Shape{e[0].scalar<int64_t>() == 2 ? 2 : 1})};
  });
  auto kept = Collect(mixed.Window(2).IgnoreErrors());
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->size(), 2u);  // [0 1] and [4 5]; [2 3] differ
}

TEST(WindowTest, BadArgumentsAreInvalidArgument) {
  for (const Dataset& ds : {Dataset::Range(3).Window(0), Dataset::Range(3).Window(2, {.shift = 0}),
                            Dataset::Range(3).Window(2, {.stride = 0})}) {
    EXPECT_EQ(ds.MakeIterator()->GetNext().status().code(), absl::StatusCode::kInvalidArgument);
  }
  // The message names the node, as every other op's does.
  EXPECT_EQ(Dataset::Range(3).Window(2, {.shift = 0}).MakeIterator()->GetNext().status().message(),
            "Window[1]: size 2, shift 0 and stride 1 must all be >= 1");
  EXPECT_EQ(Dataset::Range(0, 3, 0).MakeIterator()->GetNext().status().message(),
            "Range[0]: step must not be 0");
}

TEST(WindowTest, CheckpointsResumeExactly) {
  ExpectCheckpointsResumeExactly(Dataset::Range(20).Window(4, {.shift = 1, .stride = 2}),
                                 {0, 1, 5, 13, 15, 16, 17, 20});
  ExpectCheckpointsResumeExactly(Dataset::Range(20).Window(3, {.shift = 5}), {0, 1, 2, 3, 4});
  ExpectCheckpointsResumeExactly(Dataset::Range(20).Window(5, {.drop_remainder = true}),
                                 {0, 1, 3, 4});
}

// A checkpoint whose kept elements do not start at the next window is refused (the
// iterator_restore fuzzer found one that made the next window index before its kept elements).
TEST(WindowTest, RestoreRefusesKeptElementsThatAreNotTheNextWindows) {
  const Dataset ds = Dataset::Range(10).Window(3, {.shift = 1});
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  proto::IteratorCheckpoint checkpoint;
  ASSERT_TRUE(checkpoint.ParseFromString(*saved));
  ASSERT_TRUE(ds.MakeIterator()->Restore(*saved).ok());
  auto& ints = *checkpoint.mutable_root()->mutable_ints();
  EXPECT_EQ(ints.at("start"), 1);
  // Nothing kept, yet elements read past the window's start; or kept from after the start.
  proto::IteratorCheckpoint empty = checkpoint;
  empty.mutable_root()->clear_buffer();
  (*empty.mutable_root()->mutable_ints())["base"] = ints.at("read");
  proto::IteratorCheckpoint later = checkpoint;
  later.mutable_root()->mutable_buffer()->RemoveLast();
  (*later.mutable_root()->mutable_ints())["base"] = 2;
  for (const proto::IteratorCheckpoint& bad : {empty, later}) {
    absl::Status restored = ds.MakeIterator()->Restore(bad.SerializeAsString());
    EXPECT_EQ(restored.code(), absl::StatusCode::kDataLoss) << restored;
  }
}

TEST(RebatchTest, RowsInNewBatches) {
  EXPECT_THAT(Windows(Dataset::Range(10).Batch(4).Rebatch(3)),
              ElementsAre(W{0, 1, 2}, W{3, 4, 5}, W{6, 7, 8}, W{9}));
  EXPECT_THAT(Windows(Dataset::Range(10).Batch(4).Rebatch(3, /*drop_remainder=*/true)),
              ElementsAre(W{0, 1, 2}, W{3, 4, 5}, W{6, 7, 8}));
  EXPECT_THAT(Windows(Dataset::Range(10).Batch(3).Rebatch(5)),
              ElementsAre(W{0, 1, 2, 3, 4}, W{5, 6, 7, 8, 9}));
  ExpectCheckpointsResumeExactly(Dataset::Range(10).Batch(4).Rebatch(3), {0, 1, 2, 3, 4});
}

}  // namespace
}  // namespace sluice
