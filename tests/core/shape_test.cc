#include "core/shape.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;

TEST(ShapeTest, NumElementsAndDebugString) {
  EXPECT_EQ(Shape{}.num_elements(), 1);
  EXPECT_EQ((Shape{2, 3, 4}).num_elements(), 24);
  EXPECT_EQ((Shape{2, 0, 4}).num_elements(), 0);
  EXPECT_EQ((Shape{2, 3}).DebugString(), "[2, 3]");
  EXPECT_EQ(Shape{}.DebugString(), "[]");
}

TEST(ShapeTest, FromUntrustedDimsAcceptsWhatFits) {
  const std::vector<int64_t> dims = {3, 0, 7};
  absl::StatusOr<Shape> s = Shape::FromUntrustedDims(dims);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s, (Shape{3, 0, 7}));
  const std::vector<int64_t> at_limit = {int64_t{1} << 30, int64_t{1} << 29};
  EXPECT_TRUE(Shape::FromUntrustedDims(at_limit).ok());
  EXPECT_EQ(Shape::FromUntrustedDims({})->rank(), 0);
}

TEST(ShapeTest, FromUntrustedDimsRefusesNegativeAndOverflowingShapes) {
  const std::vector<int64_t> negative = {2, -1};
  EXPECT_THAT(Shape::FromUntrustedDims(negative).status().message(),
              HasSubstr("shape [2, -1] has a negative dimension"));
  // 2^64 elements: num_elements() would overflow.
  const std::vector<int64_t> overflow = {1 << 16, 1 << 16, 1 << 16, 1 << 16};
  EXPECT_EQ(Shape::FromUntrustedDims(overflow).status().code(), absl::StatusCode::kInvalidArgument);
  // One past the limit, and a huge shape hidden behind a zero.
  const std::vector<int64_t> past = {int64_t{1} << 30, (int64_t{1} << 29) + 1};
  EXPECT_THAT(Shape::FromUntrustedDims(past).status().message(),
              HasSubstr("more than 2^59 elements"));
  const std::vector<int64_t> behind_zero = {0, int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_FALSE(Shape::FromUntrustedDims(behind_zero).ok());
}

}  // namespace
}  // namespace sluice
