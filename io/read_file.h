#ifndef SLUICE_IO_READ_FILE_H_
#define SLUICE_IO_READ_FILE_H_

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/statusor.h"

namespace sluice {

// A whole file's bytes, in one read into a string of the file's size (a stream's rdbuf() into a
// stringstream copies them twice more). When it cannot be opened, open(2)'s error as a status
// naming `path` (NotFound, PermissionDenied, ...; FailedPrecondition for a directory);
// ResourceExhausted, before reading, when it holds more than `max_bytes`; DataLoss when it
// shrank while being read. Bytes added after it was opened are not read.
absl::StatusOr<std::string> ReadFileToString(
    const std::string& path, uint64_t max_bytes = std::numeric_limits<uint64_t>::max());

}  // namespace sluice

#endif  // SLUICE_IO_READ_FILE_H_
