#include "train/backend/cuda/strided_index.h"

#include <gtest/gtest.h>

#include <vector>

#include "train/backend/broadcast.h"

namespace sluice::train::backend::cuda {
namespace {

// Host-only: the index the kernels read operands through.

TEST(StridedIndexTest, ContiguousOperandsMergeIntoOneDim) {
  const Shape out{64, 256};
  auto index = MakeStridedIndex(out, ContiguousStrides(out), ContiguousStrides(out));
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ(index->rank, 1);
  EXPECT_EQ(index->dims[0], 64 * 256);
  EXPECT_EQ(index->stride_a[0], 1);
  EXPECT_EQ(index->stride_b[0], 1);
}

TEST(StridedIndexTest, RowBroadcastKeepsTwoDims) {
  const Shape out{64, 256};
  auto index = MakeStridedIndex(out, ContiguousStrides(out),
                                train::backend::BroadcastStrides(Shape{256}, out));
  ASSERT_TRUE(index.ok());
  ASSERT_EQ(index->rank, 2);
  EXPECT_EQ(index->dims[0], 64);
  EXPECT_EQ(index->dims[1], 256);
  EXPECT_EQ(index->stride_a[0], 256);
  EXPECT_EQ(index->stride_b[0], 0);
  EXPECT_EQ(index->stride_b[1], 1);
}

TEST(StridedIndexTest, SizeOneDimsAreDropped) {
  const Shape out{1, 5, 1, 3};
  auto index = MakeStridedIndex(out, {0, 3, 0, 1}, {0, 0, 0, 1});
  ASSERT_TRUE(index.ok());
  ASSERT_EQ(index->rank, 2);
  EXPECT_EQ(index->dims[0], 5);
  EXPECT_EQ(index->dims[1], 3);
  EXPECT_EQ(index->stride_a[0], 3);
  EXPECT_EQ(index->stride_b[0], 0);
}

TEST(StridedIndexTest, ScalarHasRankZero) {
  auto index = MakeStridedIndex(Shape{}, {}, {});
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->rank, 0);
}

TEST(StridedIndexTest, TooManyUnmergeableDimsIsAnError) {
  // Alternating broadcast dims cannot merge: 9 dims remain.
  Shape out;
  std::vector<int64_t> sa, sb;
  for (int d = 0; d < 9; ++d) {
    out.AddDim(2);
    sa.push_back(d % 2 == 0 ? 0 : 1);
    sb.push_back(d % 2 == 0 ? 1 : 0);
  }
  EXPECT_FALSE(MakeStridedIndex(out, sa, sb).ok());
}

TEST(StridedIndexTest, ContiguousStridesAreRowMajor) {
  EXPECT_EQ(ContiguousStrides(Shape{2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_TRUE(ContiguousStrides(Shape{}).empty());
}

}  // namespace
}  // namespace sluice::train::backend::cuda
