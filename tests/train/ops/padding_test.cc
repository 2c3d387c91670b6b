#include "train/ops/padding.h"

#include <gtest/gtest.h>

namespace sluice::train::ops {
namespace {

TEST(PaddingTest, ValidAndSameMatchTf) {
  Window w = *ComputeWindow(7, 3, 2, 1, Padding::kValid);
  EXPECT_EQ(w.out, 3);
  EXPECT_EQ(w.pad_before + w.pad_after, 0);
  w = *ComputeWindow(7, 3, 2, 1, Padding::kSame);  // out 4, total (3*2+3-7) = 2
  EXPECT_EQ(w.out, 4);
  EXPECT_EQ(w.pad_before, 1);
  EXPECT_EQ(w.pad_after, 1);
  w = *ComputeWindow(6, 2, 2, 1, Padding::kSame);  // exact fit: no padding
  EXPECT_EQ(w.out, 3);
  EXPECT_EQ(w.pad_before + w.pad_after, 0);
  w = *ComputeWindow(5, 3, 1, 2, Padding::kSame);  // span 5: total 4
  EXPECT_EQ(w.out, 5);
  EXPECT_EQ(w.pad_before, 2);
  EXPECT_EQ(w.pad_after, 2);
  w = *ComputeWindow(4, 2, 1, 1, Padding::kSame);  // odd total: the extra goes after
  EXPECT_EQ(w.pad_before, 0);
  EXPECT_EQ(w.pad_after, 1);
  EXPECT_FALSE(ComputeWindow(2, 3, 1, 1, Padding::kValid).ok());
  EXPECT_FALSE(ComputeWindow(5, 3, 0, 1, Padding::kValid).ok());
}

}  // namespace
}  // namespace sluice::train::ops
