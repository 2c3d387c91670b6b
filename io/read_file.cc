#include "io/read_file.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "io/input_stream.h"

namespace sluice {

absl::StatusOr<std::string> ReadFileToString(const std::string& path, uint64_t max_bytes) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<FileInputStream> file, FileInputStream::Open(path));
  SLUICE_ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  if (size > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": ", size, " bytes, over the limit of ", max_bytes));
  }
  std::string bytes(size, '\0');
  SLUICE_ASSIGN_OR_RETURN(const size_t done, ReadUpTo(*file, bytes.data(), bytes.size()));
  if (done < size) {
    return absl::DataLossError(
        absl::StrCat(path, ": read ", done, " of its ", size, " bytes: it shrank meanwhile"));
  }
  return bytes;
}

}  // namespace sluice
