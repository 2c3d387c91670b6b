#ifndef SLUICE_TESTS_WIRE_ENCODING_H_
#define SLUICE_TESTS_WIRE_ENCODING_H_

// Hand encoding of the protobuf wire format for tests of the parsers that walk it (Example,
// SequenceExample, saved elements): independent of the code under test, and able to write what
// protobuf's serializer never does (fields out of order, unpacked repeated fields, duplicates).

#include <cstdint>
#include <cstring>
#include <string>

namespace sluice::testing {

inline std::string Varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
inline std::string Tag(uint32_t field, int wire_type) {
  return Varint(uint64_t{field} << 3 | static_cast<uint64_t>(wire_type));
}
inline std::string LenField(uint32_t field, const std::string& payload) {
  return Tag(field, 2) + Varint(payload.size()) + payload;
}
inline std::string VarintField(uint32_t field, uint64_t v) { return Tag(field, 0) + Varint(v); }
inline std::string Fixed32Field(uint32_t field, float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  std::string s = Tag(field, 5);
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(bits >> (8 * i)));
  return s;
}

// An entry of a protobuf map field (Features.feature, FeatureLists.feature_list): key = 1,
// value = 2.
inline std::string MapEntry(const std::string& key, const std::string& value) {
  return LenField(1, LenField(1, key) + LenField(2, value));
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_WIRE_ENCODING_H_
