#ifndef SLUICE_IO_CRC32C_H_
#define SLUICE_IO_CRC32C_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace sluice {

// CRC-32C (Castagnoli), the checksum TFRecord files carry. The implementation is picked at run
// time from the CPU: AVX-512 carry-less multiplication (VPCLMULQDQ) folding 256 bytes a step,
// else the SSE4.2 crc32 instruction on three interleaved streams, else a slicing-by-8 table.

// The CRC of `data`.
uint32_t Crc32c(absl::string_view data);
// The CRC of A+B given crc = Crc32c(A) and d = B: lets a checksum be computed piece by piece.
uint32_t Crc32cExtend(uint32_t crc, absl::string_view d);

// TFRecord stores CRCs masked, because a CRC computed over data that itself holds CRCs is weak.
inline uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t UnmaskCrc32c(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

// The implementations behind Crc32cExtend, exposed so that tests can check each against the
// others. Each Extend* must only be called when its Has* says the CPU can run it.
namespace crc32c_internal {
bool HasSse42();
bool HasAvx512Clmul();  // AVX-512F and VPCLMULQDQ (and SSE4.2).
uint32_t ExtendPortable(uint32_t crc, absl::string_view data);
uint32_t ExtendSse42(uint32_t crc, absl::string_view data);
uint32_t ExtendAvx512Clmul(uint32_t crc, absl::string_view data);
}  // namespace crc32c_internal

}  // namespace sluice

#endif  // SLUICE_IO_CRC32C_H_
