// ElementFromSerialized against protobuf's own parser followed by ElementFromProto: the same
// element from every encoding protobuf accepts, an error wherever protobuf refuses the bytes.

#include "dataset/dataset_base.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/buffer_pool.h"
#include "core/tensor.h"
#include "dataset/proto/iterator_state.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/wire_encoding.h"

namespace sluice {
namespace {

using ::sluice::testing::LenField;
using ::sluice::testing::Varint;
using ::sluice::testing::VarintField;
using ::testing::HasSubstr;

// What protobuf's parser and ElementFromProto make of `bytes`.
absl::StatusOr<Element> ViaProtobuf(const std::string& bytes) {
  proto::ElementProto p;
  if (!p.ParseFromString(bytes)) return absl::DataLossError("protobuf refuses it");
  return ElementFromProto(p);
}

// Both parsers agree on `bytes`: the same element, or both an error.
void ExpectAgree(const std::string& bytes) {
  const absl::StatusOr<Element> ours = ElementFromSerialized(bytes);
  const absl::StatusOr<Element> theirs = ViaProtobuf(bytes);
  ASSERT_EQ(ours.ok(), theirs.ok())
      << "ours: " << ours.status() << ", protobuf's " << theirs.status();
  if (ours.ok()) {
    EXPECT_TRUE(ElementsEqual(*ours, *theirs))
        << ElementDebugString(*ours) << " vs " << ElementDebugString(*theirs);
  }
}

Element Varied() {
  Tensor image(DType::kUint8, Shape{5, 4, 3});
  for (int64_t i = 0; i < image.num_elements(); ++i) image.data<uint8_t>()[i] = i * 7 % 251;
  return {image,
          *Tensor::FromVector<float>({1.5f, -2.0f, 3.25f, 0.0f}, Shape{2, 2}),
          Tensor::Scalar<int64_t>(-42),
          Tensor::FromVector<std::string>({"a", "", std::string("\0b", 2)}),
          Tensor(DType::kFloat32, Shape{0, 3}),
          Tensor::Scalar<int32_t>(7)};
}

std::string Serialized(const Element& e) {
  proto::ElementProto p;
  ElementToProto(e, &p);
  return p.SerializeAsString();
}

TEST(ElementFromSerializedTest, RoundTripsWhatElementToProtoWrites) {
  const Element e = Varied();
  absl::StatusOr<Element> got = ElementFromSerialized(Serialized(e));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(ElementsEqual(*got, e)) << ElementDebugString(*got);
  absl::StatusOr<Element> empty = ElementFromSerialized("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(ElementFromSerializedTest, ReadsEveryEncodingProtobufAccepts) {
  const std::string data = "\x01\x02\x03\x04\x05\x06";
  const std::vector<std::string> tensors = {
      // Fields out of order, shape unpacked.
      LenField(3, data) + VarintField(2, 2) + VarintField(2, 3) + VarintField(1, 0),
      // Shape packed, then one more value unpacked; the last data and dtype win.
      VarintField(1, 9) + LenField(2, Varint(3)) + VarintField(2, 2) + LenField(3, "xx") +
          VarintField(1, 0) + LenField(3, data),
      // Unknown fields of every wire type, a group among them, and known fields of the wrong
      // wire type (skipped, as protobuf keeps them as unknown fields).
      VarintField(1, 0) + VarintField(9, 1) + "\x45\x01\x02\x03\x04" +  // 8: fixed32
          "\x49\x01\x02\x03\x04\x05\x06\x07\x08" +                      // 9: fixed64
          "\x53\x08\x01\x54" + LenField(1, "?") +
          std::string("\x1d\x00\x00\x00\x00", 5) +  // 10: group; 1, 3
          LenField(2, Varint(6)) + LenField(3, data),
      // A bytes tensor: strings accumulate; its dtype with high bits set (an int32 field keeps
      // the low 32).
      VarintField(1, (uint64_t{1} << 32) | 6) + LenField(2, Varint(2)) + LenField(4, "p") +
          LenField(4, ""),
      // A dtype outside DType, a shape too large, data of the wrong size.
      VarintField(1, 99),
      VarintField(1, 0) + LenField(2, Varint(uint64_t{1} << 62)),
      VarintField(1, 0) + LenField(2, Varint(7)) + LenField(3, data),
      VarintField(1, 6) + LenField(2, Varint(3)) + LenField(4, "p"),
      // Field number 0 (a fuzzed saved element, base64 AQoMAggSCPrf/0FAABAA): protobuf refuses
      // it with every wire type.
      std::string("\x02\x08\x12\x08\xfa\xdf\xff\x41\x40\x00\x10\x00", 12),
      VarintField(1, 0) + std::string("\x00\x01", 2),
      VarintField(1, 0) + std::string("\x05\x00\x00\x00\x00", 5),
      // Negative dims (ten-byte varints) and a negative dtype.
      VarintField(1, 0) + VarintField(2, static_cast<uint64_t>(-1)),
      VarintField(1, static_cast<uint64_t>(-2)),
  };
  for (const std::string& t : tensors) {
    SCOPED_TRACE(::testing::PrintToString(t));
    ExpectAgree(LenField(1, t));
    ExpectAgree(LenField(1, t) + VarintField(1, 5) + LenField(2, "skipped") + LenField(1, t));
  }
  for (size_t i = 0; i < 4; ++i) {  // the valid encodings above
    EXPECT_TRUE(ElementFromSerialized(LenField(1, tensors[i])).ok()) << i;
  }
  const absl::StatusOr<Element> mixed = ElementFromSerialized(LenField(1, tensors[0]));
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  ASSERT_EQ(mixed->size(), 1u);
  EXPECT_EQ((*mixed)[0].shape(), (Shape{2, 3}));
  EXPECT_EQ((*mixed)[0].dtype(), DType::kUint8);
}

TEST(ElementFromSerializedTest, EveryTruncationAndDamageIsRefusedWhereProtobufRefusesIt) {
  const std::string whole = Serialized(Varied());
  for (size_t n = 0; n < whole.size(); ++n) {
    SCOPED_TRACE(n);
    ExpectAgree(whole.substr(0, n));
    std::string damaged = whole;
    damaged[n] = static_cast<char>(damaged[n] ^ 0x80);
    ExpectAgree(damaged);
  }
}

TEST(ElementFromSerializedTest, LargeValuesReuseThePoolsMemory) {
  Tensor image(DType::kUint8, Shape{256, 256, 3});
  for (int64_t i = 0; i < image.num_elements(); ++i) image.data<uint8_t>()[i] = i % 253;
  const std::string bytes = Serialized({image, Tensor::Scalar<int64_t>(3)});
  std::shared_ptr<BufferPool> pool = BufferPool::Create(4);
  absl::StatusOr<Element> first = ElementFromSerialized(bytes, pool.get());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(ElementsEqual(*first, {image, Tensor::Scalar<int64_t>(3)}));
  const void* memory = (*first)[0].raw_data();
  first->clear();
  EXPECT_EQ(pool->free_blocks(), 1u);  // the image's block, not the label's
  absl::StatusOr<Element> second = ElementFromSerialized(bytes, pool.get());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)[0].raw_data(), memory);
  EXPECT_TRUE(ElementsEqual(*second, {image, Tensor::Scalar<int64_t>(3)}));
  EXPECT_EQ(pool->free_blocks(), 0u);
}

TEST(ElementFromSerializedTest, ErrorsNameTheByteAndWhatIsWrong) {
  absl::StatusOr<Element> cut = ElementFromSerialized(LenField(1, VarintField(1, 0)).substr(0, 2));
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(cut.status().message(), HasSubstr("malformed protobuf at byte 0"));
  absl::StatusOr<Element> short_data =
      ElementFromSerialized(LenField(1, VarintField(1, 0) + LenField(2, Varint(3)) + "\x1a\x01x"));
  EXPECT_EQ(short_data.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(short_data.status().message(), HasSubstr("holds 1 bytes, expected 3"));
  absl::StatusOr<Element> packed =
      ElementFromSerialized(LenField(1, VarintField(1, 0) + LenField(2, "\x80")));
  EXPECT_EQ(packed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(
      packed.status().message(),
      HasSubstr("malformed protobuf at byte 6: truncated or overlong varint in packed shape"));
}

}  // namespace
}  // namespace sluice
