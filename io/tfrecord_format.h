#ifndef SLUICE_IO_TFRECORD_FORMAT_H_
#define SLUICE_IO_TFRECORD_FORMAT_H_

// The TFRecord framing shared by the reader, the writer and the record index:
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes | data |
//   uint32 masked CRC-32C of data

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/strings/string_view.h"
#include "io/crc32c.h"

namespace sluice::tfrecord {

inline constexpr size_t kHeaderSize = 12;
inline constexpr size_t kFooterSize = 4;
inline constexpr size_t kOverhead = kHeaderSize + kFooterSize;

inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}
inline void EncodeFixed64(char* p, uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  std::memcpy(p, &v, sizeof(v));
}
inline void EncodeFixed32(char* p, uint32_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  std::memcpy(p, &v, sizeof(v));
}

// The masked CRC a header must carry for its first 8 bytes.
inline uint32_t HeaderCrc(const char* header) {
  return MaskCrc32c(Crc32c(absl::string_view(header, 8)));
}
inline bool HeaderCrcOk(const char* header) {
  return DecodeFixed32(header + 8) == HeaderCrc(header);
}

inline void EncodeHeader(char* header, uint64_t length) {
  EncodeFixed64(header, length);
  EncodeFixed32(header + 8, HeaderCrc(header));
}

}  // namespace sluice::tfrecord

#endif  // SLUICE_IO_TFRECORD_FORMAT_H_
