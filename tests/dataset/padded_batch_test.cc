#include <memory>
#include <string>
#include <vector>

#include "absl/base/config.h"
#include "dataset/dataset_base.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"
#include "tests/tensor_values.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::Values;
using ::testing::ElementsAre;

// Element i: int64 [i % 4] holding i in every entry.
Dataset Ragged(int64_t n) {
  return Dataset::Range(n).Map([](Element e) -> absl::StatusOr<Element> {
    const int64_t i = e[0].scalar<int64_t>();
    return Element{Tensor::FromVector(std::vector<int64_t>(static_cast<size_t>(i % 4), i))};
  });
}

TEST(PaddedBatchTest, PadsToTheLongestInTheBatch) {
  auto ds = Ragged(6).PaddedBatch(3);
  EXPECT_EQ(ds.Cardinality(), 2);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  // Lengths 0, 1, 2.
  EXPECT_EQ((*out)[0][0].shape(), Shape({3, 2}));
  EXPECT_THAT(Values<int64_t>((*out)[0][0]), ElementsAre(0, 0, 1, 0, 2, 2));
  // Lengths 3, 0, 1.
  EXPECT_EQ((*out)[1][0].shape(), Shape({3, 3}));
  EXPECT_THAT(Values<int64_t>((*out)[1][0]), ElementsAre(3, 3, 3, 0, 0, 0, 5, 0, 0));
}

TEST(PaddedBatchTest, FixedShapeAndPaddingValue) {
  auto out = Collect(Ragged(5).PaddedBatch(
      2, {.padded_shapes = {{4}}, .padding_values = {Tensor::Scalar<int64_t>(-1)}}));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_EQ((*out)[0][0].shape(), Shape({2, 4}));
  EXPECT_THAT(Values<int64_t>((*out)[0][0]), ElementsAre(-1, -1, -1, -1, 1, -1, -1, -1));
  EXPECT_THAT(Values<int64_t>((*out)[1][0]), ElementsAre(2, 2, -1, -1, 3, 3, 3, -1));
  EXPECT_EQ((*out)[2][0].shape(), Shape({1, 4}));
  EXPECT_THAT(Values<int64_t>((*out)[2][0]), ElementsAre(-1, -1, -1, -1));  // element 4 is empty
}

TEST(PaddedBatchTest, ElementLargerThanAFixedDimensionIsAnError) {
  auto it = Ragged(6).PaddedBatch(3, {.padded_shapes = {{2}}}).MakeIterator();
  auto got = Drain(*it);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(),
            "PaddedBatch[2] at element 1: element 0 of the batch: component 0 has shape [3], "
            "larger than padded_shapes[0] [2] in dimension 0");
  EXPECT_EQ(it->GetNext().status(), got.status());
}

// Element i: float [1 + i % 3, 3 - i % 2], entry (r, c) = 100 i + 10 r + c.
Dataset Matrices(int64_t n) {
  return Dataset::Range(n).Map([](Element e) -> absl::StatusOr<Element> {
    const int64_t i = e[0].scalar<int64_t>();
    const int64_t rows = 1 + i % 3, cols = 3 - i % 2;
    std::vector<float> v;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) v.push_back(static_cast<float>(100 * i + 10 * r + c));
    }
    auto t = Tensor::FromVector(v, Shape{rows, cols});
    if (!t.ok()) return t.status();
    return Element{e[0], *t};
  });
}

TEST(PaddedBatchTest, TwoDimensionsWithAMixedSpec) {
  // Rows to the longest, columns fixed at 4; the scalar component is stacked.
  auto out = Collect(Matrices(5).PaddedBatch(
      5, {.padded_shapes = {{}, {-1, 4}},
          .padding_values = {Tensor::Scalar<int64_t>(0), Tensor::Scalar(-1.0f)}}));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  const Element& b = (*out)[0];
  EXPECT_THAT(Values<int64_t>(b[0]), ElementsAre(0, 1, 2, 3, 4));
  ASSERT_EQ(b[1].shape(), Shape({5, 3, 4}));
  auto v = b[1].flat<float>();
  for (int64_t i = 0; i < 5; ++i) {
    const int64_t rows = 1 + i % 3, cols = 3 - i % 2;
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t c = 0; c < 4; ++c) {
        const float want = r < rows && c < cols ? static_cast<float>(100 * i + 10 * r + c) : -1.0f;
        EXPECT_EQ(v[(i * 3 + r) * 4 + c], want) << i << " " << r << " " << c;
      }
    }
  }
}

TEST(PaddedBatchTest, DefaultSpecPadsEveryDimension) {
  auto out = Collect(Matrices(3).PaddedBatch(3));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0][1].shape(), Shape({3, 3, 3}));
  auto v = (*out)[0][1].flat<float>();
  EXPECT_EQ(v[0 * 9 + 0 * 3 + 2], 2.0f);    // element 0 is [1, 3]
  EXPECT_EQ(v[0 * 9 + 1 * 3 + 0], 0.0f);    // padded row
  EXPECT_EQ(v[1 * 9 + 1 * 3 + 1], 111.0f);  // element 1 is [2, 2]
  EXPECT_EQ(v[1 * 9 + 1 * 3 + 2], 0.0f);    // padded column
  EXPECT_EQ(v[2 * 9 + 2 * 3 + 2], 222.0f);  // element 2 is [3, 3]
}

TEST(PaddedBatchTest, BytesPadWithEmptyOrGivenStrings) {
  auto words = Dataset::Range(3).Map([](Element e) -> absl::StatusOr<Element> {
    const int64_t i = e[0].scalar<int64_t>();
    std::vector<std::string> v;
    for (int64_t k = 0; k < i + 1; ++k) v.push_back(std::string(static_cast<size_t>(k + 1), 'a'));
    return Element{Tensor::FromVector(v)};
  });
  auto plain = Collect(words.PaddedBatch(3));
  ASSERT_TRUE(plain.ok()) << plain.status();
  auto p = (*plain)[0][0].flat<std::string>();
  EXPECT_THAT(std::vector<std::string>(p.begin(), p.end()),
              ElementsAre("a", "", "", "a", "aa", "", "a", "aa", "aaa"));
  auto padded =
      Collect(words.PaddedBatch(2, {.padding_values = {Tensor::Scalar<std::string>("<pad>")}}));
  ASSERT_TRUE(padded.ok()) << padded.status();
  auto q = (*padded)[0][0].flat<std::string>();
  EXPECT_THAT(std::vector<std::string>(q.begin(), q.end()), ElementsAre("a", "<pad>", "a", "aa"));
}

TEST(PaddedBatchTest, SameShapesNeedNoPadding) {
  auto out = Collect(Dataset::Range(4).PaddedBatch(4));
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Values<int64_t>((*out)[0][0]), ElementsAre(0, 1, 2, 3));
}

TEST(PaddedBatchTest, DropRemainderAndCardinality) {
  auto ds = Ragged(7).PaddedBatch(3, {.drop_remainder = true});
  EXPECT_EQ(ds.Cardinality(), 2);
  EXPECT_EQ(Ragged(7).PaddedBatch(3).Cardinality(), 3);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->size(), 2u);
}

TEST(PaddedBatchTest, EmptyInputAndEndOfSequence) {
  auto empty = Collect(Ragged(0).PaddedBatch(2));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  for (int64_t n : {1, 2, 3, 4}) {
    auto it = Ragged(n).PaddedBatch(2).MakeIterator();
    auto got = Drain(*it);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(static_cast<int64_t>(got->size()), (n + 1) / 2);
    for (int i = 0; i < 2; ++i) {
      auto e = it->GetNext();
      ASSERT_TRUE(e.ok());
      EXPECT_FALSE(e->has_value());
    }
  }
}

TEST(PaddedBatchTest, MismatchErrors) {
  auto rank = Collect(Dataset::Range(2)
                          .Map([](Element e) -> absl::StatusOr<Element> {
                            if (e[0].scalar<int64_t>() == 1)
                              return Element{Tensor::Zeros(DType::kInt64, Shape{2})};
                            return e;
                          })
                          .PaddedBatch(2));
  ASSERT_FALSE(rank.ok());
  EXPECT_EQ(rank.status().message(),
            "PaddedBatch[2] at element 0: element 1 of the batch: component 0 has shape [2] of "
            "rank 1, expected rank 0 like the batch's first element");
  auto value = Collect(Ragged(2).PaddedBatch(2, {.padding_values = {Tensor::Scalar(1.0f)}}));
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().message(),
            "PaddedBatch[2] at element 0: padding_values[0] is float32, but component 0 is int64");
  auto spec = Collect(Ragged(2).PaddedBatch(2, {.padded_shapes = {{2, 2}}}));
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "PaddedBatch[2] at element 0: padded_shapes[0] [2, 2] has rank 2, but component 0 of "
            "the batch's first element has shape [0]");
  auto arity = Collect(Ragged(2).PaddedBatch(2, {.padded_shapes = {{-1}, {-1}}}));
  ASSERT_FALSE(arity.ok());
  EXPECT_EQ(arity.status().message(),
            "PaddedBatch[2] at element 0: padded_shapes has 2 shapes, but the elements have 1 "
            "components");
  auto not_scalar =
      Collect(Ragged(2).PaddedBatch(2, {.padding_values = {Tensor::FromVector<int64_t>({1, 2})}}));
  ASSERT_FALSE(not_scalar.ok());
  EXPECT_EQ(not_scalar.status().message(),
            "PaddedBatch[2]: padding_values[0] must be a scalar, got shape [2]");
}

TEST(PaddedBatchTest, InputErrorPassesThroughAndIterationContinues) {
  auto ds = Ragged(8)
                .Map([](Element e) -> absl::StatusOr<Element> {
                  if (e[0].num_elements() == 3) return absl::InvalidArgumentError("bad");
                  return e;
                })
                .PaddedBatch(2);
  IteratorContext ctx;
  ctx.runtime = std::make_shared<Runtime>(2);
  ctx.cancellation = std::make_shared<CancellationManager>();
  ctx.stats = std::make_shared<StatsRegistry>();
  auto it = ds.base()->MakeIterator(ctx);
  ASSERT_TRUE(it.ok());
  auto b0 = (*it)->GetNext();  // elements 0, 1
  ASSERT_TRUE(b0.ok() && b0->has_value());
  auto err = (*it)->GetNext();  // 2 gathered, 3 fails: 2 is dropped with it
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().message(), "Map[2] at element 3: bad");
  auto b1 = (*it)->GetNext();  // elements 4 (empty) and 5
  ASSERT_TRUE(b1.ok() && b1->has_value());
  EXPECT_THAT(Values<int64_t>((**b1)[0]), ElementsAre(0, 5));
}

TEST(PaddedBatchTest, CheckpointResumesExactly) {
  testing::ExpectCheckpointsResumeExactly(Ragged(10).PaddedBatch(3), {0, 1, 2, 3, 4});
  testing::ExpectCheckpointsResumeExactly(
      Matrices(7).PaddedBatch(2, {.padded_shapes = {{}, {3, 4}}, .drop_remainder = true}),
      {0, 1, 3});
}

// A batch too large for the machine is ResourceExhausted, and its rows go with it: under
// IgnoreErrors the next call makes the next batch (they were kept, and the same batch was retried
// without end).
TEST(PaddedBatchOutOfMemoryTest, AFailedBatchIsSkippedNotRetried) {
#if defined(ABSL_HAVE_ADDRESS_SANITIZER) || defined(ABSL_HAVE_THREAD_SANITIZER)
  GTEST_SKIP() << "the sanitizers' allocators abort on such a request";
#endif
  const Dataset huge =
      Dataset::FromTensorSlices({*Tensor::FromVector<int64_t>({0, 1, 2, 3}, Shape{4, 1})})
          .PaddedBatch(2, {.padded_shapes = {{int64_t{1} << 44}}});  // 2 x 128 TiB
  auto failed = huge.MakeIterator()->GetNext();
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kResourceExhausted) << failed.status();
  EXPECT_THAT(failed.status().message(), ::testing::HasSubstr("out of memory"));
  auto skipped = Collect(huge.IgnoreErrors());
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  EXPECT_TRUE(skipped->empty());  // both batches failed and were skipped; the loop ended
}

}  // namespace
}  // namespace sluice
