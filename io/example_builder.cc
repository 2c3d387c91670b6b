#include "io/example_builder.h"

#include <bit>
#include <utility>

namespace sluice {
namespace {

// Wire format: tag = field number << 3 | wire type; 2 = length-delimited.
constexpr char kLen1 = (1 << 3) | 2;  // field 1, length-delimited
constexpr char kLen2 = (2 << 3) | 2;  // field 2, length-delimited

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Size of a length-delimited field with a one-byte tag and `len` payload bytes.
size_t LenFieldSize(size_t len) { return 1 + VarintSize(len) + len; }

void PutLenHeader(char tag, size_t len, std::string* out) {
  out->push_back(tag);
  PutVarint(len, out);
}

// The payload size of the Int64List / FloatList / BytesList.
size_t ListSize(const std::vector<int64_t>& v) {
  size_t packed = 0;
  for (int64_t x : v) packed += VarintSize(static_cast<uint64_t>(x));
  return v.empty() ? 0 : LenFieldSize(packed);  // proto3 writes no empty packed field
}
size_t ListSize(const std::vector<float>& v) { return v.empty() ? 0 : LenFieldSize(4 * v.size()); }
size_t ListSize(const std::vector<std::string>& v) {
  size_t n = 0;
  for (const std::string& s : v) n += LenFieldSize(s.size());
  return n;
}

void PutList(const std::vector<int64_t>& v, std::string* out) {
  if (v.empty()) return;
  size_t packed = 0;
  for (int64_t x : v) packed += VarintSize(static_cast<uint64_t>(x));
  PutLenHeader(kLen1, packed, out);
  // int64 is not zigzag-encoded: negative values take ten bytes, as in protobuf.
  for (int64_t x : v) PutVarint(static_cast<uint64_t>(x), out);
}
void PutList(const std::vector<float>& v, std::string* out) {
  if (v.empty()) return;
  PutLenHeader(kLen1, 4 * v.size(), out);
  for (float f : v) {
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(bits >> (8 * i)));
  }
}
void PutList(const std::vector<std::string>& v, std::string* out) {
  for (const std::string& s : v) {
    PutLenHeader(kLen1, s.size(), out);
    out->append(s);
  }
}

// Feature's oneof field number for each list type: bytes_list = 1,
// float_list = 2, int64_list = 3.
char FeatureTag(const std::vector<std::string>&) { return (1 << 3) | 2; }
char FeatureTag(const std::vector<float>&) { return (2 << 3) | 2; }
char FeatureTag(const std::vector<int64_t>&) { return (3 << 3) | 2; }

}  // namespace

ExampleBuilder& ExampleBuilder::AddInt64(std::string name, std::vector<int64_t> values) {
  features_[std::move(name)] = std::move(values);
  return *this;
}

ExampleBuilder& ExampleBuilder::AddFloat(std::string name, std::vector<float> values) {
  features_[std::move(name)] = std::move(values);
  return *this;
}

ExampleBuilder& ExampleBuilder::AddBytes(std::string name, std::vector<std::string> values) {
  features_[std::move(name)] = std::move(values);
  return *this;
}

std::string ExampleBuilder::Serialize() const {
  if (features_.empty()) return std::string();
  // Example { features = 1: Features { feature = 1: repeated entry { key = 1, value = 2: Feature
  // { oneof list } } } }. Sizes first, since every level is length-prefixed.
  auto feature_size = [](const Values& values) {
    return std::visit([](const auto& v) { return LenFieldSize(ListSize(v)); }, values);
  };
  auto entry_size = [&](const std::string& name, const Values& values) {
    return LenFieldSize(name.size()) + LenFieldSize(feature_size(values));
  };
  size_t features_size = 0;
  for (const auto& [name, values] : features_)
    features_size += LenFieldSize(entry_size(name, values));

  std::string out;
  out.reserve(LenFieldSize(features_size));
  PutLenHeader(kLen1, features_size, &out);
  for (const auto& [name, values] : features_) {
    PutLenHeader(kLen1, entry_size(name, values), &out);
    PutLenHeader(kLen1, name.size(), &out);
    out.append(name);
    PutLenHeader(kLen2, feature_size(values), &out);
    std::visit(
        [&out](const auto& v) {
          PutLenHeader(FeatureTag(v), ListSize(v), &out);
          PutList(v, &out);
        },
        values);
  }
  return out;
}

}  // namespace sluice
