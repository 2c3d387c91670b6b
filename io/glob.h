#ifndef SLUICE_IO_GLOB_H_
#define SLUICE_IO_GLOB_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace sluice {

// The paths matching any of `patterns` (POSIX glob(3): `*`, `?`, `[...]` and
// `[!...]`, in any path component; a leading `.` must be matched
// explicitly, as in the shell), as one list sorted bytewise without
// duplicates, so that results do not depend on the locale or the file system.
// A pattern without wildcards names one path, which must exist.
//
// Errors: NotFound naming the pattern that matched nothing (or whose directory
// does not exist); PermissionDenied or another error naming the directory
// that could not be read (GLOB_ERR: a read error is not silently skipped).
absl::StatusOr<std::vector<std::string>> Glob(absl::Span<const std::string> patterns);
absl::StatusOr<std::vector<std::string>> Glob(absl::string_view pattern);

}  // namespace sluice

#endif  // SLUICE_IO_GLOB_H_
