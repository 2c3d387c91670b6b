#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::Ints;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Components: int64 [4], float32 [4, 2], bytes [4].
Element Table() {
  auto m = Tensor::FromVector<float>({0, 1, 10, 11, 20, 21, 30, 31}, Shape{4, 2});
  return {Tensor::FromVector<int64_t>({5, 6, 7, 8}), *m,
          Tensor::FromVector<std::string>({"a", "b", "c", "d"})};
}

TEST(FromTensorSlicesTest, SlicesEveryComponentAlongTheFirstDimension) {
  const Element table = Table();
  auto ds = Dataset::FromTensorSlices(table);
  EXPECT_EQ(ds.Cardinality(), 4);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 4u);
  EXPECT_THAT(Ints(*out), ElementsAre(5, 6, 7, 8));
  for (int64_t i = 0; i < 4; ++i) {
    const Element& e = (*out)[i];
    ASSERT_EQ(e.size(), 3u);
    EXPECT_EQ(e[0].shape(), Shape{});
    EXPECT_EQ(e[1].shape(), Shape{2});
    EXPECT_EQ(e[1].flat<float>()[0], 10.0f * i);
    EXPECT_EQ(e[1].flat<float>()[1], 10.0f * i + 1);
    EXPECT_EQ(e[2].shape(), Shape{});
    EXPECT_EQ(e[2].scalar<std::string>(), std::string(1, static_cast<char>('a' + i)));
    // Zero-copy: views into the input's buffers.
    for (int c = 0; c < 3; ++c) EXPECT_TRUE(e[c].SharesBufferWith(table[c])) << i << "," << c;
  }
}

TEST(FromTensorSlicesTest, ZeroRowsIsEmpty) {
  auto ds = Dataset::FromTensorSlices({Tensor(DType::kInt64, Shape{0, 3})});
  EXPECT_EQ(ds.Cardinality(), 0);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->empty());
}

TEST(FromTensorSlicesTest, MismatchedFirstDimensionIsReportedAtFirstGetNext) {
  auto ds = Dataset::FromTensorSlices(
      {Tensor::FromVector<int64_t>({1, 2, 3}), Tensor::FromVector<int64_t>({1, 2})});
  auto it = ds.MakeIterator();
  auto e = it->GetNext();
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status().message(),
            "FromTensorSlices[0]: component 1 has shape [2] (2 rows), expected 3 rows like "
            "component 0 (shape [3])");
}

TEST(FromTensorSlicesTest, ScalarComponentIsAnError) {
  auto e = Collect(
      Dataset::FromTensorSlices({Tensor::FromVector<int64_t>({1, 2}), Tensor::Scalar<int64_t>(3)}));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("component 1 is a scalar"));
}

TEST(FromTensorSlicesTest, NoComponentsIsAnError) {
  auto e = Collect(Dataset::FromTensorSlices(Element{}));
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("no components"));
}

TEST(FromTensorSlicesTest, EndOfSequenceAtEveryPosition) {
  for (int64_t n = 0; n <= 3; ++n) {
    auto it = Dataset::FromTensorSlices({Tensor(DType::kInt64, Shape{n})}).MakeIterator();
    auto got = Drain(*it);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(static_cast<int64_t>(got->size()), n);
    for (int i = 0; i < 2; ++i) {
      auto e = it->GetNext();
      ASSERT_TRUE(e.ok());
      EXPECT_FALSE(e->has_value());
    }
  }
}

TEST(FromTensorSlicesTest, CheckpointResumesExactly) {
  testing::ExpectCheckpointsResumeExactly(Dataset::FromTensorSlices(Table()), {0, 1, 3, 4});
}

}  // namespace
}  // namespace sluice
