#include "core/status_macros.h"

#include "gtest/gtest.h"

namespace sluice {
namespace {

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  SLUICE_ASSIGN_OR_RETURN(int h, Half(x));
  SLUICE_ASSIGN_OR_RETURN(h, Half(h));  // Assigning to an existing variable.
  return h;
}

absl::Status CheckEven(int x) {
  SLUICE_RETURN_IF_ERROR(Half(x));
  SLUICE_RETURN_IF_ERROR(absl::OkStatus());
  return absl::OkStatus();
}

TEST(StatusMacrosTest, PropagateErrorsAndValues) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().message(), "odd");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(3).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
