#include "train/autodiff/variable.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/gradient_check.h"

namespace sluice::train::autodiff {
namespace {

using ::sluice::train::testing::T;
using ::sluice::train::testing::Values;
using ::testing::ElementsAre;

TEST(VariableTest, OwnsACopyAndAssignsInPlace) {
  Tensor init = T({1, 2}, {2});
  Variable v(init, "w");
  EXPECT_FALSE(v.value().SharesBufferWith(init));
  const void* data = v.value().raw_data();
  ASSERT_TRUE(v.Assign(T({3, 4}, {2})).ok());
  EXPECT_THAT(Values(v.value()), ElementsAre(3, 4));
  EXPECT_EQ(v.value().raw_data(), data);
  EXPECT_EQ(v.Assign(T({3}, {1})).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(v.name(), "w");
  EXPECT_TRUE(v.trainable());
}

TEST(VariableTest, ReadUnderTapeIsWatched) {
  Variable v(T({1}, {1}));
  Tape tape;
  EXPECT_FALSE(tape.IsTracked(v.mutable_value()));
  (void)v.value();
  EXPECT_TRUE(tape.IsTracked(v.mutable_value()));
}

}  // namespace
}  // namespace sluice::train::autodiff
