#include "core/partial_shape.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(PartialShapeTest, RankDimsAndDebugString) {
  EXPECT_EQ(PartialShape().rank(), 0);
  EXPECT_EQ(PartialShape().DebugString(), "[]");
  const PartialShape s{2, PartialShape::kUnknownDim, 3};
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.dim(1), PartialShape::kUnknownDim);
  EXPECT_EQ(s.DebugString(), "[2, ?, 3]");
  EXPECT_FALSE(s.IsFullyDefined());
  EXPECT_TRUE((PartialShape{2, 3}).IsFullyDefined());
  EXPECT_EQ(PartialShape::UnknownRank().rank(), -1);
  EXPECT_TRUE(PartialShape::UnknownRank().dims().empty());
  EXPECT_FALSE(PartialShape::UnknownRank().IsFullyDefined());
  EXPECT_EQ(PartialShape::UnknownRank().DebugString(), "<unknown>");
  EXPECT_EQ(PartialShape::UnknownDims(2).DebugString(), "[?, ?]");
  EXPECT_EQ(PartialShape(Shape{4, 5}), (PartialShape{4, 5}));
  // Any negative dimension reads as unknown.
  EXPECT_EQ((PartialShape{-7, 1}), (PartialShape{-1, 1}));
}

TEST(PartialShapeTest, CompatibleWithAShapeOfTheSameRankAndKnownSizes) {
  const PartialShape s{PartialShape::kUnknownDim, 3};
  EXPECT_TRUE(s.IsCompatibleWith(Shape{5, 3}));
  EXPECT_TRUE(s.IsCompatibleWith(Shape{0, 3}));
  EXPECT_FALSE(s.IsCompatibleWith(Shape{5, 4}));
  EXPECT_FALSE(s.IsCompatibleWith(Shape{3}));
  EXPECT_FALSE(s.IsCompatibleWith(Shape{5, 3, 1}));
  EXPECT_TRUE(PartialShape().IsCompatibleWith(Shape{}));
  EXPECT_FALSE(PartialShape().IsCompatibleWith(Shape{1}));
  EXPECT_TRUE(PartialShape::UnknownRank().IsCompatibleWith(Shape{}));
  EXPECT_TRUE(PartialShape::UnknownRank().IsCompatibleWith(Shape{1, 2, 3}));
}

TEST(PartialShapeTest, CompatibleWithAnotherPartialShapeWhereNoKnownSizesDisagree) {
  EXPECT_TRUE((PartialShape{-1, 3}).IsCompatibleWith(PartialShape{2, -1}));
  EXPECT_FALSE((PartialShape{-1, 3}).IsCompatibleWith(PartialShape{2, 4}));
  EXPECT_FALSE((PartialShape{-1, 3}).IsCompatibleWith(PartialShape{-1}));
  EXPECT_TRUE((PartialShape{2}).IsCompatibleWith(PartialShape::UnknownRank()));
  EXPECT_TRUE(PartialShape::UnknownRank().IsCompatibleWith(PartialShape{2}));
}

TEST(PartialShapeTest, MostSpecificCompatibleShapeForgetsWhatDiffers) {
  EXPECT_EQ((PartialShape{2, 3}).MostSpecificCompatibleShape(PartialShape{2, 3}),
            (PartialShape{2, 3}));
  EXPECT_EQ((PartialShape{2, 3}).MostSpecificCompatibleShape(PartialShape{4, 3}),
            (PartialShape{-1, 3}));
  EXPECT_EQ((PartialShape{2, 3}).MostSpecificCompatibleShape(PartialShape{2, -1}),
            (PartialShape{2, -1}));
  EXPECT_EQ((PartialShape{2, 3}).MostSpecificCompatibleShape(PartialShape{2}),
            PartialShape::UnknownRank());
  EXPECT_EQ(PartialShape().MostSpecificCompatibleShape(PartialShape::UnknownRank()),
            PartialShape::UnknownRank());
}

TEST(PartialShapeTest, InsertAndRemoveDimensionsLeaveAnUnknownRankAlone) {
  PartialShape s{3};
  s.InsertDim(0, PartialShape::kUnknownDim);
  EXPECT_EQ(s, (PartialShape{-1, 3}));
  s.InsertDim(2, 4);
  EXPECT_EQ(s, (PartialShape{-1, 3, 4}));
  s.RemoveDim(0);
  EXPECT_EQ(s, (PartialShape{3, 4}));
  PartialShape u = PartialShape::UnknownRank();
  u.InsertDim(0, 2);
  u.RemoveDim(0);
  EXPECT_EQ(u, PartialShape::UnknownRank());
}

}  // namespace
}  // namespace sluice
