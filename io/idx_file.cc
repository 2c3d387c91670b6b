#include "io/idx_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sluice {

int IdxTypeSize(IdxType type) {
  switch (type) {
    case IdxType::kUint8:
    case IdxType::kInt8:
      return 1;
    case IdxType::kInt16:
      return 2;
    case IdxType::kInt32:
    case IdxType::kFloat32:
      return 4;
    case IdxType::kFloat64:
      return 8;
  }
  return 0;
}

int64_t IdxFile::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t IdxFile::row_elements() const {
  int64_t n = 1;
  for (size_t i = 1; i < dims.size(); ++i) n *= dims[i];
  return n;
}

absl::StatusOr<IdxFile> ParseIdx(absl::string_view bytes, absl::string_view name) {
  if (bytes.size() < 4) {
    return absl::DataLossError(
        absl::StrCat(name, ": ", bytes.size(), " bytes, expected at least the 4-byte IDX magic"));
  }
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  if (b[0] != 0 || b[1] != 0) {
    return absl::DataLossError(absl::StrCat(name,
                                            ": bad IDX magic at offset 0: expected 00 00, got ",
                                            static_cast<int>(b[0]), " ", static_cast<int>(b[1])));
  }
  IdxFile file;
  file.type = static_cast<IdxType>(b[2]);
  if (IdxTypeSize(file.type) == 0) {
    return absl::DataLossError(absl::StrCat(name, ": unknown IDX type code ",
                                            static_cast<int>(b[2]),
                                            " at offset 2 (expected 8, 9, 11, 12, 13 or 14)"));
  }
  const int rank = b[3];
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < header) {
    return absl::DataLossError(absl::StrCat(name, ": truncated header: ", rank, " dimensions need ",
                                            header, " bytes, file has ", bytes.size()));
  }
  // Dimensions are u32; guard the product against overflow before trusting it.
  int64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    const unsigned char* p = b + 4 + 4 * i;
    const int64_t d = (int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | p[3];
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / 8 / d) {
      return absl::DataLossError(absl::StrCat(name, ": dimensions overflow at dimension ", i));
    }
    count *= d;
    file.dims.push_back(d);
  }
  const size_t expected = static_cast<size_t>(count) * IdxTypeSize(file.type);
  if (bytes.size() - header != expected) {
    return absl::DataLossError(absl::StrCat(name, ": expected ", expected,
                                            " bytes of data after the ", header,
                                            "-byte header, got ", bytes.size() - header));
  }
  file.data = std::string(bytes.substr(header));
  return file;
}

namespace {

// The header's size and the whole file's size it declares, once `bytes` holds the header;
// nullopt before. (Dimensions whose product overflows report the maximum: ParseIdx names them.)
std::optional<std::pair<size_t, uint64_t>> DeclaredSize(const std::string& bytes) {
  if (bytes.size() < 4) return std::nullopt;
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t header = 4 + 4 * static_cast<size_t>(b[3]);
  if (bytes.size() < header) return std::nullopt;
  uint64_t total = static_cast<uint64_t>(std::max(IdxTypeSize(static_cast<IdxType>(b[2])), 1));
  for (size_t i = 0; i < b[3]; ++i) {
    const unsigned char* p = b + 4 + 4 * i;
    const uint64_t d =
        (uint64_t{p[0]} << 24) | (uint64_t{p[1]} << 16) | (uint64_t{p[2]} << 8) | p[3];
    if (d != 0 && total > std::numeric_limits<uint64_t>::max() / 2 / d) {
      return std::make_pair(header, std::numeric_limits<uint64_t>::max());
    }
    total *= d;
  }
  return std::make_pair(header, header + total);
}

}  // namespace

absl::StatusOr<IdxFile> ReadIdxFile(const std::string& path, int64_t max_bytes) {
  gzFile in = gzopen(path.c_str(), "rb");
  if (in == nullptr) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  std::string bytes;
  char buffer[1 << 16];
  std::optional<std::pair<size_t, uint64_t>> declared;
  while (true) {
    int n = gzread(in, buffer, sizeof(buffer));
    if (n < 0) {
      int errnum = 0;
      std::string message = gzerror(in, &errnum);
      gzclose(in);
      return absl::DataLossError(
          absl::StrCat(path, ": decompression failed after ", bytes.size(), " bytes: ", message));
    }
    if (n == 0) break;
    bytes.append(buffer, n);
    // Stop as soon as the header says too much, or the data runs past what it says: a small
    // .gz can inflate to any size (a "gzip bomb").
    if (!declared) declared = DeclaredSize(bytes);
    if (declared && declared->second > static_cast<uint64_t>(max_bytes)) {
      gzclose(in);
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": the header declares ", declared->second,
                       " bytes, more than ReadIdxFile's max_bytes (", max_bytes, ")"));
    }
    if (declared && bytes.size() > declared->second) {
      gzclose(in);
      return absl::DataLossError(
          absl::StrCat(path, ": more than the ", declared->second, " bytes its header declares"));
    }
  }
  gzclose(in);
  return ParseIdx(bytes, path);
}

}  // namespace sluice
