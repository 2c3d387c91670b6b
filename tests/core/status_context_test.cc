#include "core/status_context.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(WithContextTest, PutsTheContextFirstAndKeepsTheCodeAndThePayloads) {
  absl::Status inner = absl::DataLossError("bad record");
  inner.SetPayload("sluice.dev/test", absl::Cord("42"));
  const absl::Status outer = WithContext(inner, "train-0.tfrecord: ");
  EXPECT_EQ(outer.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(outer.message(), "train-0.tfrecord: bad record");
  ASSERT_TRUE(outer.GetPayload("sluice.dev/test").has_value());
  EXPECT_EQ(*outer.GetPayload("sluice.dev/test"), "42");
  EXPECT_TRUE(WithContext(absl::OkStatus(), "ignored: ").ok());
}

}  // namespace
}  // namespace sluice
