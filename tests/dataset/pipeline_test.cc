// A whole input pipeline as a user declares it (the DESIGN's example):
// ListFiles -> Interleave(TFRecord) -> Map(parse + random) -> Shuffle ->
// Batch -> Prefetch, on golden files from an independent writer.
#include <algorithm>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/example_parser.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;

// small100.tfrecord, .gz and .zlib: 3 files of 100 Examples with id = 0..99.
Dataset Pipeline(int parallelism, uint64_t seed) {
  auto parser = ExampleParser::Create({{{"id", FixedLenFeature{DType::kInt64}}}});
  return Dataset::ListFiles(std::string(SLUICE_TEST_DATA) + "/small100.tfrecord*",
                            {.shuffle = true})
      .Interleave([](const std::string& f) { return Dataset::TFRecord(f); },
                  {.cycle_length = 3, .block_length = 4, .num_parallel_calls = parallelism})
      .Map(
          [parser = *parser](Element e, const ElementContext& c) -> absl::StatusOr<Element> {
            SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> f,
                                    parser.Parse(e[0].scalar<std::string>()));
            // A "random augmentation": depends only on the per-element seed.
            return Element{f[0], Tensor::Scalar<int64_t>(static_cast<int64_t>(c.seed % 1000))};
          },
          {.num_parallel_calls = parallelism})
      .Shuffle(50)
      .Batch(16, {.drop_remainder = false})
      .Prefetch(parallelism == 1 ? 1 : kAutotune)
      .WithOptions({.seed = seed});
}

std::vector<int64_t> BatchIds(const std::vector<Element>& batches) {
  std::vector<int64_t> ids;
  for (const Element& b : batches) {
    for (int64_t id : b[0].flat<int64_t>()) ids.push_back(id);
  }
  return ids;
}

TEST(PipelineTest, YieldsEveryRecordOnceAndBatchesThem) {
  auto out = Collect(Pipeline(2, 7));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 19u);  // ceil(300 / 16)
  EXPECT_EQ((*out)[0][0].shape(), Shape({16}));
  EXPECT_EQ(out->back()[0].shape(), Shape({300 % 16}));
  std::vector<int64_t> ids = BatchIds(*out);
  std::sort(ids.begin(), ids.end());
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 100; ++i) want.insert(want.end(), {i, i, i});
  EXPECT_EQ(ids, want);
}

TEST(PipelineTest, DeterministicWhateverTheParallelism) {
  auto one = Collect(Pipeline(1, 7));
  ASSERT_TRUE(one.ok()) << one.status();
  for (int p : {2, 8, kAutotune}) {
    auto other = Collect(Pipeline(p, 7));
    ASSERT_TRUE(other.ok()) << other.status();
    ASSERT_EQ(other->size(), one->size()) << "parallelism " << p;
    for (size_t i = 0; i < one->size(); ++i) {
      EXPECT_TRUE(ElementsEqual((*one)[i], (*other)[i])) << "parallelism " << p << " batch " << i;
    }
  }
  auto reseeded = Collect(Pipeline(2, 8));
  ASSERT_TRUE(reseeded.ok());
  EXPECT_NE(BatchIds(*reseeded), BatchIds(*one));
}

TEST(PipelineTest, CheckpointResumesExactly) {
  for (int p : {1, 2}) {
    testing::ExpectCheckpointsResumeExactly(Pipeline(p, 11), {0, 1, 3, 10, 18, 19});
  }
}

}  // namespace
}  // namespace sluice
