#ifndef SLUICE_IO_CHECKSUMMED_WIRE_READER_H_
#define SLUICE_IO_CHECKSUMMED_WIRE_READER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/input_stream.h"

namespace sluice {

// Protobuf's wire format read from a stream front to back, keeping the CRC-32C of every byte
// consumed. For messages that protobuf cannot parse in one piece (over 2 GiB) or should not
// (their large bytes fields would be copied twice): the caller walks the outer fields itself and
// reads each large field straight into its destination, checking the CRC at the end.
//
// Every read is bounded by `end`, the stream position where the enclosing message ends: a length
// or a varint that runs past it is DataLoss, so a corrupt length never allocates more than the
// bytes that are really there. Errors name the stream position; callers add the file.
class ChecksummedWireReader {
 public:
  // A field's key: its number and wire type.
  struct Key {
    uint32_t number = 0;
    int wire_type = 0;
  };
  static constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

  // Reads `in` from its current position on; the CRC starts from `crc`.
  explicit ChecksummedWireReader(BufferedInputStream& in, uint32_t crc = 0) : in_(in), crc_(crc) {}

  // The stream position of the next byte.
  uint64_t position() const { return in_.position(); }
  // The CRC-32C (unmasked) of every byte consumed so far.
  uint32_t crc() const { return crc_; }

  absl::StatusOr<uint64_t> ReadVarint(uint64_t end);
  absl::StatusOr<Key> ReadKey(uint64_t end);
  // A length-delimited field's length, which must fit before `end`.
  absl::StatusOr<uint64_t> ReadLength(uint64_t end);
  // `n` bytes into `dst`; larger reads go straight from the file into `dst`.
  absl::Status Read(char* dst, uint64_t n, uint64_t end);
  absl::StatusOr<std::string> ReadString(uint64_t n, uint64_t end);
  absl::Status Skip(uint64_t n, uint64_t end);
  // The value of a field whose key was just read, skipped, or appended to `out` after its key
  // (out = nullptr skips): the bytes protobuf would parse back to the same field. Groups are
  // DataLoss: no message read this way has them.
  absl::Status CopyValue(const Key& key, uint64_t end, std::string* out);

  static void AppendVarint(uint64_t v, std::string& out);

 private:
  absl::Status Bound(uint64_t n, uint64_t end, const char* what) const;

  BufferedInputStream& in_;
  uint32_t crc_;
};

}  // namespace sluice

#endif  // SLUICE_IO_CHECKSUMMED_WIRE_READER_H_
