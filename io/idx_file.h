#ifndef SLUICE_IO_IDX_FILE_H_
#define SLUICE_IO_IDX_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice {

// The element types of the IDX format (MNIST, Fashion-MNIST), as its third magic byte.
enum class IdxType : uint8_t {
  kUint8 = 0x08,
  kInt8 = 0x09,
  kInt16 = 0x0B,
  kInt32 = 0x0C,
  kFloat32 = 0x0D,
  kFloat64 = 0x0E,
};

// Bytes per element of `type`.
int IdxTypeSize(IdxType type);

// One IDX file: a big-endian header (two zero bytes, the type, the number of
// dimensions, then each dimension as a u32) followed by the values, row-major.
struct IdxFile {
  IdxType type = IdxType::kUint8;
  std::vector<int64_t> dims;
  // The values as stored: big-endian for multi-byte types.
  std::string data;

  int64_t num_elements() const;
  // Elements per entry of the first dimension (28 * 28 for an image file).
  int64_t row_elements() const;
};

// Parses the bytes of an (uncompressed) IDX file. `name` is used in error
// messages. The data must be exactly as long as the dimensions say.
absl::StatusOr<IdxFile> ParseIdx(absl::string_view bytes, absl::string_view name = "IDX data");

// Reads an IDX file, gzip-compressed (`*.gz`, as distributed) or not: zlib
// reads both. A header declaring more than `max_bytes` (4 GiB by default; Fashion-MNIST's
// largest file is 47 MB) is ResourceExhausted naming the limit, and data longer than the header
// declares is DataLoss, both found while inflating, so that a small corrupt .gz cannot inflate
// into all of memory first.
absl::StatusOr<IdxFile> ReadIdxFile(const std::string& path, int64_t max_bytes = int64_t{1} << 32);

}  // namespace sluice

#endif  // SLUICE_IO_IDX_FILE_H_
