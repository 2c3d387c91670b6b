#include "core/os_error.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

constexpr char kErrnoPayloadUrl[] = "sluice/errno";

}  // namespace

absl::Status OsErrorWithMessage(int error_number, absl::string_view message) {
  return WithErrno(absl::ErrnoToStatus(error_number, message), error_number);
}

absl::Status WithErrno(absl::Status status, int error_number) {
  if (!status.ok()) status.SetPayload(kErrnoPayloadUrl, absl::Cord(absl::StrCat(error_number)));
  return status;
}

std::optional<int> ErrnoOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kErrnoPayloadUrl);
  int error_number = 0;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &error_number)) return std::nullopt;
  return error_number;
}

}  // namespace sluice
