#ifndef SLUICE_CORE_OS_ERROR_H_
#define SLUICE_CORE_OS_ERROR_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace sluice {

// An error the operating system reported: absl::ErrnoToStatus's code and message ("`message`:
// strerror"), with the errno kept as a payload. The code alone loses which error it was (EISDIR,
// ENOTDIR and EBUSY are all FailedPrecondition); Python raises what its own open() would
// (IsADirectoryError, PermissionError, ...) from the number.
absl::Status OsError(int error_number, absl::string_view message);

// `status` with `error_number` as its errno payload: for a message of our own about an OS error.
absl::Status WithErrno(absl::Status status, int error_number);

// The errno an OsError or WithErrno status carries; nullopt for any other status. Payloads
// survive WithContext.
std::optional<int> ErrnoOf(const absl::Status& status);

}  // namespace sluice

#endif  // SLUICE_CORE_OS_ERROR_H_
