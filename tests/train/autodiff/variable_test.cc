#include "train/autodiff/variable.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/train/backend/guarded_backend.h"
#include "tests/train/gradient_check.h"
#include "train/backend/transfer.h"

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

// A checkpoint, written at once, shares host values; device values are always copied to the
// host; EarlyStopping's kept best weights (the default) copy both.
TEST(VariableTest, SnapshotsShareHostValuesOnlyWhenAsked) {
  Variable a(T({1, 2}, {2}), "a");
  absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> shared =
      SnapshotVariables({&a}, HostValues::kShare);
  absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> copied = SnapshotVariables({&a});
  ASSERT_TRUE(shared.ok() && copied.ok());
  EXPECT_EQ((*shared)[0].first, "a");
  EXPECT_TRUE((*shared)[0].second.SharesBufferWith(a.mutable_value()));
  EXPECT_FALSE((*copied)[0].second.SharesBufferWith(a.mutable_value()));
  EXPECT_THAT(Values((*copied)[0].second), ElementsAre(1, 2));
  testing::RegisterGuardedBackend();
  absl::StatusOr<Tensor> on_device = backend::CopyTo(T({3, 4}, {2}), Device::Guarded());
  ASSERT_TRUE(on_device.ok()) << on_device.status();
  Variable g(*on_device, "g");
  absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> from_device =
      SnapshotVariables({&g}, HostValues::kShare);
  ASSERT_TRUE(from_device.ok()) << from_device.status();
  EXPECT_TRUE((*from_device)[0].second.device().is_cpu());
  EXPECT_THAT(Values((*from_device)[0].second), ElementsAre(3, 4));
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
