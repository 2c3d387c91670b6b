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

// Element i is a sequence [n, n, ...] of length n = lengths[i], with the label 10 n.
Dataset Sequences(std::vector<int64_t> lengths) {
  return Dataset::FromTensorSlices({Tensor::FromVector<int64_t>(lengths)})
      .Map([](Element e) -> absl::StatusOr<Element> {
        const int64_t n = e[0].scalar<int64_t>();
        Tensor seq(DType::kInt64, Shape{n});
        for (int64_t i = 0; i < n; ++i) seq.data<int64_t>()[i] = n;
        return Element{std::move(seq), Tensor::Scalar<int64_t>(n * 10)};
      });
}

absl::StatusOr<int64_t> Length(const Element& e) { return e[0].dim(0); }

// Each batch's sequence shape and labels.
struct Batch {
  Shape shape;
  std::vector<int64_t> labels;
  bool operator==(const Batch&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Batch& b) {
  os << b.shape.DebugString() << " [";
  for (int64_t l : b.labels) os << l << " ";
  return os << "]";
}

std::vector<Batch> Batches(const Dataset& ds) {
  auto elements = Collect(ds);
  EXPECT_TRUE(elements.ok()) << elements.status();
  std::vector<Batch> out;
  if (!elements.ok()) return out;
  for (const Element& e : *elements) {
    out.push_back({e[0].shape(),
                   std::vector<int64_t>(e[1].data<int64_t>(), e[1].data<int64_t>() + e[1].dim(0))});
  }
  return out;
}

// As tf.data: boundaries [3, 5] make buckets [0, 3), [3, 5) and [5, inf), batched by 2, 2, 3;
// each batch padded to its longest, the rest flushed in bucket order at the end.
TEST(BucketBySequenceLengthTest, BucketsByLengthAndPadsToTheLongest) {
  const Dataset ds =
      Sequences({1, 4, 2, 6, 3, 5, 7, 1}).BucketBySequenceLength(Length, {3, 5}, {2, 2, 3});
  EXPECT_THAT(Batches(ds), ElementsAre(Batch{Shape{2, 2}, {10, 20}}, Batch{Shape{2, 4}, {40, 30}},
                                       Batch{Shape{3, 7}, {60, 50, 70}}, Batch{Shape{1, 1}, {10}}));
  // Padding is zero, the elements' values kept.
  auto first = Collect(ds);
  ASSERT_TRUE(first.ok());
  EXPECT_THAT(
      std::vector<int64_t>((*first)[0][0].data<int64_t>(), (*first)[0][0].data<int64_t>() + 4),
      ElementsAre(1, 0, 2, 2));
}

TEST(BucketBySequenceLengthTest, PadToBucketBoundaryGivesEveryBatchOfABucketOneShape) {
  const Dataset ds =
      Sequences({1, 4, 2, 3, 1})
          .BucketBySequenceLength(Length, {3, 5}, {2, 2, 2}, {.pad_to_bucket_boundary = true});
  EXPECT_THAT(Batches(ds), ElementsAre(Batch{Shape{2, 2}, {10, 20}}, Batch{Shape{2, 4}, {40, 30}},
                                       Batch{Shape{1, 2}, {10}}));
  // Explicit shapes: -1 becomes the boundary - 1; padding values apply.
  auto padded = Collect(Sequences({1}).BucketBySequenceLength(
      Length, {3, 5}, {2, 2, 2},
      {.padded_shapes = {{-1}, {}},
       .padding_values = {Tensor::Scalar<int64_t>(-1), Tensor::Scalar<int64_t>(0)},
       .pad_to_bucket_boundary = true}));
  ASSERT_TRUE(padded.ok()) << padded.status();
  EXPECT_THAT(
      std::vector<int64_t>((*padded)[0][0].data<int64_t>(), (*padded)[0][0].data<int64_t>() + 2),
      ElementsAre(1, -1));
  // A sequence as long as the last boundary has no boundary to pad to.
  auto it = Sequences({1, 5})
                .BucketBySequenceLength(Length, {3, 5}, {2, 2, 2}, {.pad_to_bucket_boundary = true})
                .MakeIterator();
  auto bad = it->GetNext();
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("at element 1"));
  EXPECT_THAT(bad.status().message(), HasSubstr("lengths must be below the last boundary, 5"));
}

TEST(BucketBySequenceLengthTest, NoPaddingAndDropRemainder) {
  // Equal lengths per bucket batch without padding; drop_remainder drops the short batches.
  EXPECT_THAT(Batches(Sequences({2, 2, 4, 4, 2})
                          .BucketBySequenceLength(Length, {3}, {2, 2}, {.no_padding = true})),
              ElementsAre(Batch{Shape{2, 2}, {20, 20}}, Batch{Shape{2, 4}, {40, 40}},
                          Batch{Shape{1, 2}, {20}}));
  EXPECT_THAT(Batches(Sequences({2, 2, 4, 4, 2})
                          .BucketBySequenceLength(Length, {3}, {2, 2}, {.drop_remainder = true})),
              ElementsAre(Batch{Shape{2, 2}, {20, 20}}, Batch{Shape{2, 4}, {40, 40}}));
}

TEST(BucketBySequenceLengthTest, BadArgumentsAreInvalidArgument) {
  for (const auto& [boundaries, sizes, options] :
       std::vector<std::tuple<std::vector<int64_t>, std::vector<int64_t>, BucketOptions>>{
           {{3, 5}, {2, 2}, {}},
           {{5, 3}, {2, 2, 2}, {}},
           {{3}, {2, 0}, {}},
           {{}, {2}, {.pad_to_bucket_boundary = true}},
           {{3}, {2, 2}, {.pad_to_bucket_boundary = true, .no_padding = true}}}) {
    auto r = Sequences({1})
                 .BucketBySequenceLength(Length, boundaries, sizes, options)
                 .MakeIterator()
                 ->GetNext();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr("BucketBySequenceLength(boundaries"));
  }
}

TEST(BucketBySequenceLengthTest, CheckpointsResumeExactly) {
  ExpectCheckpointsResumeExactly(Sequences({1, 4, 2, 6, 3, 5, 7, 1, 2, 8, 3})
                                     .BucketBySequenceLength(Length, {3, 5}, {2, 2, 3}),
                                 {0, 1, 2, 3, 4, 5});
}

// Restored groups carry keys from the checkpoint: a bucket that does not exist is DataLoss when
// its window is reduced, not a read past the batch sizes.
TEST(BucketBySequenceLengthTest, RestoreRefusesABucketThatDoesNotExist) {
  for (const BucketOptions& options :
       {BucketOptions{}, BucketOptions{.pad_to_bucket_boundary = true}}) {
    const Dataset ds =
        Sequences({1, 4, 1, 2}).BucketBySequenceLength(Length, {3, 5}, {3, 3, 3}, options);
    auto it = ds.MakeIterator();
    ASSERT_TRUE(it->GetNext().ok());  // [1 1 2]; the length-4 element waits in bucket 1
    auto saved = it->Save();
    ASSERT_TRUE(saved.ok());
    proto::IteratorCheckpoint checkpoint;
    ASSERT_TRUE(checkpoint.ParseFromString(*saved));
    auto& ints = *checkpoint.mutable_root()->mutable_ints();
    ASSERT_EQ(ints.at("groups"), 1);
    for (int64_t bucket : {int64_t{2}, int64_t{7}, int64_t{-1}}) {
      if (bucket == 2 && !options.pad_to_bucket_boundary) continue;  // a real bucket there
      ints["group_key_0"] = bucket;
      auto fresh = ds.MakeIterator();
      ASSERT_TRUE(fresh->Restore(checkpoint.SerializeAsString()).ok());
      auto next = fresh->GetNext();
      EXPECT_EQ(next.status().code(), absl::StatusCode::kDataLoss)
          << bucket << ": " << next.status();
    }
  }
}

}  // namespace
}  // namespace sluice
