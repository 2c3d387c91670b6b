#include "io/glob.h"

#include <glob.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// glob(3) reports a directory it cannot read through a plain function
// pointer; the path and errno go through this per-thread slot.
struct GlobFailure {
  std::string path;
  int error = 0;
};
thread_local GlobFailure glob_failure;

int RecordFailure(const char* path, int error) {
  glob_failure.path = path;
  glob_failure.error = error;
  return 1;  // Stop: a directory we cannot read must not shrink the result silently.
}

bool HasWildcard(absl::string_view pattern) {
  return pattern.find_first_of("*?[") != absl::string_view::npos;
}

absl::Status ReadError(const std::string& pattern) {
  const int error = glob_failure.error;
  const std::string what = absl::StrCat("Glob: pattern '", pattern, "': cannot read directory '",
                                        glob_failure.path, "': ", std::strerror(error));
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(what);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(what);
    default:
      return absl::UnavailableError(what);
  }
}

// Appends the matches of one pattern to `out`.
absl::Status GlobOne(const std::string& pattern, std::vector<std::string>* out) {
  glob_t matches{};
  glob_failure = GlobFailure{};
  // GLOB_NOSORT: glob sorts by the locale's collation; Glob sorts bytewise.
  const int rc = glob(pattern.c_str(), GLOB_ERR | GLOB_NOSORT, RecordFailure, &matches);
  absl::Status status;
  switch (rc) {
    case 0:
      for (size_t i = 0; i < matches.gl_pathc; ++i) out->emplace_back(matches.gl_pathv[i]);
      break;
    case GLOB_NOMATCH:
      status = absl::NotFoundError(HasWildcard(pattern)
                                       ? absl::StrCat("Glob: no files match '", pattern, "'")
                                       : absl::StrCat("Glob: no such file: '", pattern, "'"));
      break;
    case GLOB_ABORTED:
      status = ReadError(pattern);
      break;
    case GLOB_NOSPACE:
      status = absl::ResourceExhaustedError(
          absl::StrCat("Glob: out of memory matching '", pattern, "'"));
      break;
    default:
      status =
          absl::InternalError(absl::StrCat("Glob: glob(3) returned ", rc, " for '", pattern, "'"));
  }
  globfree(&matches);
  return status;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> Glob(absl::Span<const std::string> patterns) {
  std::vector<std::string> paths;
  for (const std::string& pattern : patterns) {
    absl::Status s = GlobOne(pattern, &paths);
    if (!s.ok()) return s;
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  return paths;
}

absl::StatusOr<std::vector<std::string>> Glob(absl::string_view pattern) {
  const std::string one(pattern);
  return Glob(absl::MakeConstSpan(&one, 1));
}

}  // namespace sluice
