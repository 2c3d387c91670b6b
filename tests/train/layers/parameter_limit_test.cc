#include "train/layers/parameter_limit.h"

#include <cstdint>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "train/layers/batch_norm.h"
#include "train/layers/conv2d.h"
#include "train/layers/dense.h"

namespace sluice::train::layers {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

TEST(ParameterLimitTest, SaturatingArithmetic) {
  EXPECT_EQ(SaturatingProduct({}), 1);
  EXPECT_EQ(SaturatingProduct({3, 4, 5}), 60);
  EXPECT_EQ(SaturatingProduct({int64_t{1} << 40, int64_t{1} << 30}), kInt64Max);
  EXPECT_EQ(SaturatingProduct({7, -1}), 0);
  EXPECT_EQ(SaturatingAdd(kInt64Max - 1, 2), kInt64Max);
  EXPECT_EQ(SaturatingAdd(2, 3), 5);
}

TEST(ParameterLimitTest, LayersReserveTheirVariablesAndStopAtTheLimit) {
  // No limit: anything goes.
  EXPECT_TRUE(ReserveParameters("x", kInt64Max).ok());
  ParameterLimit limit(20);
  Dense a(4);
  ASSERT_TRUE(a.Build(Shape{1, 3}).ok());  // 3*4 + 4
  EXPECT_EQ(limit.remaining(), 4);
  EXPECT_TRUE(CheckParameters("y", 4).ok());
  EXPECT_EQ(limit.remaining(), 4);  // a check takes nothing
  Dense b(2);
  const absl::Status s = b.Build(Shape{1, 4});  // 4*2 + 2 > 4
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("asks for 10 more variable elements"));
  EXPECT_FALSE(b.built());  // nothing made: it can still be built without the limit
  {
    ParameterLimit inner(kInt64Max);  // the innermost counts
    EXPECT_TRUE(b.Build(Shape{1, 4}).ok());
    EXPECT_TRUE(b.built());
  }
  BatchNorm bn;
  EXPECT_EQ(bn.Build(Shape{1, 2}).code(), absl::StatusCode::kResourceExhausted);  // 4 * 2
  Conv2D conv(1, KernelSize(1, 1), {.use_bias = false});
  EXPECT_TRUE(conv.Build(Shape{1, 2, 2, 4}).ok());  // 1*1*4*1
  EXPECT_EQ(limit.remaining(), 0);
}

}  // namespace
}  // namespace sluice::train::layers
