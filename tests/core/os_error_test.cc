#include "core/os_error.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <optional>

#include "core/status_context.h"

namespace sluice {
namespace {

TEST(OsErrorTest, KeepsTheErrnoThatTheCodeAloneLoses) {
  const absl::Status is_dir = OsError(EISDIR, "x.tfrecord");
  const absl::Status busy = OsError(EBUSY, "y");
  // Both are FailedPrecondition: only the payload tells them apart.
  EXPECT_EQ(is_dir.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(busy.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ErrnoOf(is_dir), std::optional<int>(EISDIR));
  EXPECT_EQ(ErrnoOf(busy), std::optional<int>(EBUSY));
  EXPECT_EQ(is_dir.message(), "x.tfrecord: Is a directory");
  EXPECT_EQ(OsError(ENOENT, "z").code(), absl::StatusCode::kNotFound);
}

TEST(OsErrorTest, TheErrnoSurvivesContextAndOtherStatusesHaveNone) {
  const absl::Status inner = OsError(EACCES, "secret");
  EXPECT_EQ(ErrnoOf(WithContext(inner, "Map[2] at element 7: ")), std::optional<int>(EACCES));
  EXPECT_EQ(ErrnoOf(absl::NotFoundError("no such file")), std::nullopt);
  EXPECT_EQ(ErrnoOf(absl::OkStatus()), std::nullopt);
  const absl::Status ours = WithErrno(absl::FailedPreconditionError("d: is a directory"), EISDIR);
  EXPECT_EQ(ours.message(), "d: is a directory");
  EXPECT_EQ(ErrnoOf(ours), std::optional<int>(EISDIR));
  EXPECT_TRUE(WithErrno(absl::OkStatus(), EISDIR).ok());  // OK stays OK, without a payload
  EXPECT_EQ(ErrnoOf(WithErrno(absl::OkStatus(), EISDIR)), std::nullopt);
}

}  // namespace
}  // namespace sluice
