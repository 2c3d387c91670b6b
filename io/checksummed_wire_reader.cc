#include "io/checksummed_wire_reader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "io/crc32c.h"

namespace sluice {
namespace {

// Large reads are checksummed a slice at a time, while the slice is still in cache.
constexpr uint64_t kSlice = uint64_t{4} << 20;

}  // namespace

absl::Status ChecksummedWireReader::Bound(uint64_t n, uint64_t end, const char* what) const {
  const uint64_t at = position();
  if (at <= end && n <= end - at) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("at offset ", at, ": ", what, " of ", n,
                                          " bytes runs past the end of its message at offset ",
                                          end));
}

absl::Status ChecksummedWireReader::Read(char* dst, uint64_t n, uint64_t end) {
  SLUICE_RETURN_IF_ERROR(Bound(n, end, "a field"));
  while (n > 0) {
    const uint64_t at = position();
    const size_t want = static_cast<size_t>(std::min(n, kSlice));
    SLUICE_ASSIGN_OR_RETURN(const size_t got, in_.ReadFully(dst, want));
    crc_ = Crc32cExtend(crc_, absl::string_view(dst, got));
    if (got < want) {
      return absl::DataLossError(absl::StrCat("at offset ", at + got, ": the file ends ", n - got,
                                              " bytes early (truncated meanwhile)"));
    }
    dst += got;
    n -= got;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ChecksummedWireReader::ReadString(uint64_t n, uint64_t end) {
  SLUICE_RETURN_IF_ERROR(Bound(n, end, "a field"));
  std::string out(static_cast<size_t>(n), '\0');
  SLUICE_RETURN_IF_ERROR(Read(out.data(), n, end));
  return out;
}

absl::Status ChecksummedWireReader::Skip(uint64_t n, uint64_t end) {
  SLUICE_RETURN_IF_ERROR(Bound(n, end, "a field"));
  char scratch[16 << 10];
  while (n > 0) {
    const uint64_t take = std::min<uint64_t>(n, sizeof(scratch));
    SLUICE_RETURN_IF_ERROR(Read(scratch, take, end));
    n -= take;
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ChecksummedWireReader::ReadVarint(uint64_t end) {
  const uint64_t start = position();
  const uint64_t room = start < end ? std::min<uint64_t>(end - start, 10) : 0;
  // Decoded in place from the buffer: keys and lengths are most of the reads.
  SLUICE_ASSIGN_OR_RETURN(const size_t have, in_.Ensure(static_cast<size_t>(room)));
  const size_t limit = std::min<size_t>(have, static_cast<size_t>(room));
  const auto* bytes = reinterpret_cast<const uint8_t*>(in_.data());
  uint64_t value = 0;
  for (size_t i = 0; i < limit; ++i) {
    value |= static_cast<uint64_t>(bytes[i] & 0x7f) << (7 * i);
    if ((bytes[i] & 0x80) == 0) {
      crc_ = Crc32cExtend(crc_, absl::string_view(in_.data(), i + 1));
      in_.Consume(i + 1);
      return value;
    }
  }
  if (limit == 10) {
    return absl::DataLossError(absl::StrCat("at offset ", start, ": a varint of over 10 bytes"));
  }
  if (limit < room) {
    return absl::DataLossError(absl::StrCat("at offset ", start + limit,
                                            ": the file ends inside "
                                            "a varint (truncated meanwhile)"));
  }
  return absl::DataLossError(absl::StrCat(
      "at offset ", start, ": a varint runs past the end of its message at offset ", end));
}

absl::StatusOr<ChecksummedWireReader::Key> ChecksummedWireReader::ReadKey(uint64_t end) {
  const uint64_t at = position();
  SLUICE_ASSIGN_OR_RETURN(const uint64_t key, ReadVarint(end));
  const uint64_t number = key >> 3;
  if (number == 0 || number > (uint64_t{1} << 29) - 1) {
    return absl::DataLossError(absl::StrCat("at offset ", at, ": field number ", number,
                                            " is not a protobuf field number"));
  }
  return Key{static_cast<uint32_t>(number), static_cast<int>(key & 7)};
}

absl::StatusOr<uint64_t> ChecksummedWireReader::ReadLength(uint64_t end) {
  SLUICE_ASSIGN_OR_RETURN(const uint64_t n, ReadVarint(end));
  SLUICE_RETURN_IF_ERROR(Bound(n, end, "a length-delimited field"));
  return n;
}

absl::Status ChecksummedWireReader::CopyValue(const Key& key, uint64_t end, std::string* out) {
  if (out != nullptr) AppendVarint((uint64_t{key.number} << 3) | key.wire_type, *out);
  switch (key.wire_type) {
    case kVarint: {
      SLUICE_ASSIGN_OR_RETURN(const uint64_t v, ReadVarint(end));
      if (out != nullptr) AppendVarint(v, *out);
      return absl::OkStatus();
    }
    case kFixed64:
    case kFixed32: {
      char bytes[8];
      const uint64_t n = key.wire_type == kFixed64 ? 8 : 4;
      SLUICE_RETURN_IF_ERROR(Read(bytes, n, end));
      if (out != nullptr) out->append(bytes, n);
      return absl::OkStatus();
    }
    case kLengthDelimited: {
      SLUICE_ASSIGN_OR_RETURN(const uint64_t n, ReadLength(end));
      if (out == nullptr) return Skip(n, end);
      AppendVarint(n, *out);
      const size_t old = out->size();
      out->resize(old + n);
      return Read(out->data() + old, n, end);
    }
    default:
      return absl::DataLossError(absl::StrCat("at offset ", position(), ": field ", key.number,
                                              " has wire type ", key.wire_type,
                                              ", which no field of this message uses"));
  }
}

void ChecksummedWireReader::AppendVarint(uint64_t v, std::string& out) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

}  // namespace sluice
