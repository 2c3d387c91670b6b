#ifndef SLUICE_CORE_OS_ERROR_H_
#define SLUICE_CORE_OS_ERROR_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace sluice {

// An error the operating system reported: absl::ErrnoToStatus's code and message ("`message`:
// strerror"), with the errno kept as a payload. The code alone loses which error it was (EISDIR,
// ENOTDIR and EBUSY are all FailedPrecondition); Python raises the OSError subclass its own
// open() would (IsADirectoryError, ...) from the number where the code alone says little.
absl::Status OsErrorWithMessage(int error_number, absl::string_view message);

// OsErrorWithMessage with the message's parts joined by absl::StrCat inside, after `errno` was
// read: OsError(errno, path, ": read failed") is safe where OsError(errno, absl::StrCat(...))
// is not (arguments are evaluated in an unspecified order, and StrCat's allocation may set
// errno first). Pass parts that need no allocation to evaluate.
template <typename... Parts>
absl::Status OsError(int error_number, const Parts&... message_parts) {
  return OsErrorWithMessage(error_number, absl::StrCat(message_parts...));
}

// `status` with `error_number` as its errno payload: for a message of our own about an OS error.
absl::Status WithErrno(absl::Status status, int error_number);

// The errno an OsError or WithErrno status carries; nullopt for any other status. Payloads
// survive WithContext.
std::optional<int> ErrnoOf(const absl::Status& status);

}  // namespace sluice

#endif  // SLUICE_CORE_OS_ERROR_H_
