#include "io/feature_wire.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/proto/example.pb.h"

namespace sluice::internal {
namespace {

using ::testing::HasSubstr;
using namespace std::string_literals;

uint64_t VarintOf(const std::string& s, size_t* used) {
  uint64_t v = 0;
  const char* end = ParseVarint(s.data(), s.data() + s.size(), &v);
  *used = end == nullptr ? 0 : static_cast<size_t>(end - s.data());
  return v;
}

TEST(ParseVarintTest, DecodesOneToTenBytes) {
  size_t used;
  EXPECT_EQ(VarintOf("\x00"s, &used), 0u);
  EXPECT_EQ(used, 1u);
  EXPECT_EQ(VarintOf("\x7f", &used), 127u);
  EXPECT_EQ(VarintOf("\x96\x01", &used), 150u);
  EXPECT_EQ(used, 2u);
  EXPECT_EQ(VarintOf(std::string(9, '\xff') + "\x01", &used), ~uint64_t{0});
  EXPECT_EQ(used, 10u);
  // Trailing bytes are not consumed.
  EXPECT_EQ(VarintOf("\x05\x06", &used), 5u);
  EXPECT_EQ(used, 1u);
}

TEST(ParseVarintTest, RejectsTruncatedAndOverlong) {
  size_t used;
  VarintOf("", &used);
  EXPECT_EQ(used, 0u);
  VarintOf("\x80\x80", &used);
  EXPECT_EQ(used, 0u);
  VarintOf(std::string(10, '\x80') + "\x01", &used);  // Eleven bytes.
  EXPECT_EQ(used, 0u);
}

TEST(WireReaderTest, ReadsEveryWireType) {
  const std::string msg = "\x08\x96\x01"s +                          // 1: varint 150
                          "\x11\x01\x02\x03\x04\x05\x06\x07\x08"s +  // 2: fixed64
                          "\x1a\x03"s + "abc" +                      // 3: bytes
                          "\x25\x01\x00\x00\x80"s +                  // 4: fixed32
                          "\x2b\x08\x01\x33\x34\x2c"s +              // 5: group holding 6: group
                          "\x32\x00"s;                               // 6: empty bytes
  WireReader r(msg, msg.data());
  WireField f;
  ASSERT_TRUE(r.Next(&f).ok());
  EXPECT_EQ(f.number, 1u);
  EXPECT_EQ(f.type, WireType::kVarint);
  EXPECT_EQ(f.value, 150u);
  ASSERT_TRUE(r.Next(&f).ok());
  EXPECT_EQ(f.type, WireType::kFixed64);
  EXPECT_EQ(f.value, 0x0807060504030201u);
  ASSERT_TRUE(r.Next(&f).ok());
  EXPECT_EQ(f.number, 3u);
  EXPECT_EQ(f.type, WireType::kLen);
  EXPECT_EQ(f.bytes, "abc");
  EXPECT_EQ(f.bytes.data(), msg.data() + 14);  // A view into the input, not a copy.
  ASSERT_TRUE(r.Next(&f).ok());
  EXPECT_EQ(f.type, WireType::kFixed32);
  EXPECT_EQ(f.value, 0x80000001u);
  ASSERT_TRUE(r.Next(&f).ok());
  EXPECT_EQ(f.number, 5u);
  EXPECT_EQ(f.type, WireType::kStartGroup);
  ASSERT_TRUE(r.Next(&f).ok());
  EXPECT_EQ(f.number, 6u);
  EXPECT_EQ(f.bytes, "");
  EXPECT_TRUE(r.done());
}

absl::Status ReadAllFeatures(const std::string& msg);

// Protobuf reads a tag in at most five bytes and drops the bits past 32.
TEST(WireReaderTest, TagsAreReadAsProtobufReadsThem) {
  const std::string msg = "\x88\x80\x80\x80\x10\x07"s;  // 2^32 + (1 << 3 | 0): field 1, varint
  WireReader r(msg, msg.data());
  WireField f;
  ASSERT_TRUE(r.Next(&f).ok());
  EXPECT_EQ(f.number, 1u);
  EXPECT_EQ(f.type, WireType::kVarint);
  EXPECT_EQ(f.value, 7u);
  EXPECT_TRUE(r.done());
}

// protobuf (3.21, Debian 12's) refuses a message holding field number 0 with any wire type, at any
// depth: so does the reader, so that parsers built on it fail where protobuf fails.
TEST(WireReaderTest, FieldNumberZeroIsRefusedLikeProtobufDoes) {
  for (const std::string& msg : {"\x02\x01x\x08\x05"s, "\x08\x05\x00\x01"s, "\x05\x00\x00\x00\x00"s,
                                 "\x03\x04"s, "\x0b\x02\x01x\x0c"s}) {
    SCOPED_TRACE(::testing::PrintToString(msg));
    proto::Example example;
    EXPECT_FALSE(example.ParseFromString(msg));
    WireReader r(msg, msg.data());
    WireField f;
    absl::Status s;
    while (s.ok() && !r.done()) s = r.Next(&f);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(s.message(), HasSubstr("invalid field number 0"));
  }
}

absl::Status ReadAllFeatures(const std::string& msg) {
  WireReader r(msg, msg.data());
  WireField f;
  while (!r.done()) {
    absl::Status s = r.Next(&f);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

TEST(WireReaderTest, MalformedInputIsDataLossWithOffset) {
  struct Case {
    std::string bytes;
    std::string message;
  };
  const Case cases[] = {
      {"\x08", "at byte 0: truncated or overlong varint"},
      {"\x08\x01\x80", "at byte 2: truncated or overlong field tag"},
      {"\x0a\x05"
       "abc",
       "at byte 0: length-delimited field 1 declares 5 bytes, only 3 remain"},
      {"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\x7f", "declares"},
      {"\x11"
       "1234567",
       "at byte 0: truncated fixed-width field"},
      {"\x15"
       "123",
       "truncated fixed-width field"},
      {"\x00"s, "at byte 0: invalid field number 0"},
      {"\x08\x01\x00"s, "at byte 2: invalid field number 0"},
      {"\x0e", "invalid wire type"},
      {"\x0f", "invalid wire type"},
      {"\x0c", "end-group tag without a matching start-group"},
      {"\x0b\x08\x01", "unterminated group (field 1)"},
      {"\x0b\x14", "end-group tag for field 2 closes the group of field 1"},
      {"\x80\x80\x80\x80\x80\x01", "at byte 0: truncated or overlong field tag"},  // 6 bytes
  };
  for (const Case& c : cases) {
    absl::Status s = ReadAllFeatures(c.bytes);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << c.message;
    EXPECT_THAT(s.message(), HasSubstr(c.message));
  }
}

TEST(WireReaderTest, DeeplyNestedGroupsFailInsteadOfOverflowingTheStack) {
  std::string open, close;
  for (int i = 0; i < 100000; ++i) open += "\x0b";
  absl::Status s = ReadAllFeatures(open);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("groups nested too deeply"));
  // Sixty levels are fine.
  open.resize(60);
  close.assign(60, '\x0c');
  EXPECT_TRUE(ReadAllFeatures(open + close).ok());
}

TEST(FeatureViewTest, MergeFeatureFollowsOneofAndMergeRules) {
  const std::string origin_buf = std::string("\x1a\x02\x08\x01", 4) +  // int64_list {1}
                                 std::string("\x1a\x02\x08\x02", 4) +  // int64_list {2}: appended
                                 std::string("\x78\x05", 2);           // unknown field 15
  FeatureView view;
  ASSERT_TRUE(MergeFeature(origin_buf, origin_buf.data(), &view).ok());
  EXPECT_EQ(view.kind, FeatureKind::kInt64List);
  ASSERT_EQ(view.lists.size(), 2u);
  absl::StatusOr<int64_t> n = CountValues(view, origin_buf.data());
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2);
  Tensor out(DType::kInt64, Shape{3});
  out.data<int64_t>()[0] = -5;
  ASSERT_TRUE(DecodeValues(view, origin_buf.data(), 2, &out, 1).ok());
  EXPECT_EQ(out.data<int64_t>()[0], -5);  // Only [offset, offset + n) is written.
  EXPECT_EQ(out.data<int64_t>()[1], 1);
  EXPECT_EQ(out.data<int64_t>()[2], 2);
  // Values that do not fit the output are refused, not written.
  EXPECT_FALSE(DecodeValues(view, origin_buf.data(), 2, &out, 2).ok());

  const std::string other = "\x0a\x03\x0a\x01z";  // bytes_list {"z"}: replaces the int64s
  ASSERT_TRUE(MergeFeature(other, other.data(), &view).ok());
  EXPECT_EQ(view.kind, FeatureKind::kBytesList);
  EXPECT_EQ(view.lists.size(), 1u);
}

TEST(FeatureViewTest, KindNames) {
  EXPECT_EQ(FeatureKindName(FeatureKind::kInt64List), "int64_list");
  EXPECT_EQ(FeatureKindName(FeatureKind::kFloatList), "float_list");
  EXPECT_EQ(FeatureKindName(FeatureKind::kBytesList), "bytes_list");
  EXPECT_EQ(FeatureKindName(FeatureKind::kNone), "no list");
  EXPECT_EQ(FeatureKindOf(DType::kFloat32), FeatureKind::kFloatList);
  EXPECT_EQ(FeatureKindOf(DType::kUint8), FeatureKind::kNone);
}

}  // namespace
}  // namespace sluice::internal
