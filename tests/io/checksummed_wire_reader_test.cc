#include "io/checksummed_wire_reader.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/crc32c.h"
#include "tests/wire_encoding.h"

namespace sluice {
namespace {

using ::sluice::testing::Varint;
using ::testing::HasSubstr;

class StringStream : public InputStream {
 public:
  explicit StringStream(std::string data) : data_(std::move(data)) {}
  absl::StatusOr<size_t> Read(char* dst, size_t n) override {
    const size_t take = std::min(n, data_.size() - pos_);
    data_.copy(dst, take, pos_);
    pos_ += take;
    return take;
  }

 private:
  std::string data_;
  size_t pos_ = 0;
};

TEST(ChecksummedWireReaderTest, ReadsKeysVarintsAndBytesKeepingTheirCrc) {
  const std::string big(100000, 'z');  // read straight into the destination, past the buffer
  const std::string bytes = Varint(3 << 3 | 2) + Varint(big.size()) + big + Varint(300) +
                            Varint(uint64_t{1} << 63) + "tail";
  BufferedInputStream in(std::make_unique<StringStream>(bytes), 1024);
  ChecksummedWireReader r(in);
  const uint64_t end = bytes.size();
  absl::StatusOr<ChecksummedWireReader::Key> key = r.ReadKey(end);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(key->number, 3u);
  EXPECT_EQ(key->wire_type, ChecksummedWireReader::kLengthDelimited);
  absl::StatusOr<uint64_t> length = r.ReadLength(end);
  ASSERT_TRUE(length.ok()) << length.status();
  std::string got(*length, '\0');
  ASSERT_TRUE(r.Read(got.data(), *length, end).ok());
  EXPECT_EQ(got, big);
  EXPECT_EQ(r.ReadVarint(end).value_or(0), 300u);
  EXPECT_EQ(r.ReadVarint(end).value_or(0), uint64_t{1} << 63);
  EXPECT_EQ(r.ReadString(4, end).value_or(""), "tail");
  EXPECT_EQ(r.position(), end);
  EXPECT_EQ(r.crc(), Crc32c(bytes));
  // Nothing is left: a read past the end of the message is refused, naming both offsets.
  const absl::Status past = r.Skip(1, end);
  EXPECT_EQ(past.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(past.message()),
              HasSubstr(absl::StrCat("at offset ", end,
                                     ": a field of 1 bytes runs past the end "
                                     "of its message at offset ",
                                     end)));
}

// CopyValue re-encodes each wire type as protobuf would parse it back.
TEST(ChecksummedWireReaderTest, CopyValueKeepsEveryWireTypeAndRefusesGroups) {
  const std::string fields = Varint(1 << 3 | 0) + Varint(150) + Varint(2 << 3 | 1) +
                             std::string("12345678") + Varint(3 << 3 | 2) + Varint(3) + "abc" +
                             Varint(4 << 3 | 5) + std::string("wxyz");
  BufferedInputStream in(std::make_unique<StringStream>(fields + Varint(5 << 3 | 3)), 64);
  ChecksummedWireReader r(in);
  const uint64_t end = fields.size() + 1;
  std::string copy;
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<ChecksummedWireReader::Key> key = r.ReadKey(end);
    ASSERT_TRUE(key.ok()) << key.status();
    ASSERT_TRUE(r.CopyValue(*key, end, &copy).ok());
  }
  EXPECT_EQ(copy, fields);
  absl::StatusOr<ChecksummedWireReader::Key> group = r.ReadKey(end);
  ASSERT_TRUE(group.ok());
  EXPECT_THAT(std::string(r.CopyValue(*group, end, nullptr).message()),
              HasSubstr("field 5 has wire type 3"));
}

TEST(ChecksummedWireReaderTest, TruncatedVarintsAndFieldNumberZeroAreDataLoss) {
  {
    BufferedInputStream in(std::make_unique<StringStream>("\x80\x80"), 64);
    ChecksummedWireReader r(in);
    EXPECT_THAT(std::string(r.ReadVarint(2).status().message()),
                HasSubstr("at offset 0: a varint runs past the end of its message at offset 2"));
  }
  {
    BufferedInputStream in(std::make_unique<StringStream>(std::string("\x02", 1)), 64);
    ChecksummedWireReader r(in);
    EXPECT_THAT(std::string(r.ReadKey(1).status().message()),
                HasSubstr("field number 0 is not a protobuf field number"));
  }
  {
    // The stream ends before the message says it does (a file truncated while read).
    BufferedInputStream in(std::make_unique<StringStream>("abc"), 64);
    ChecksummedWireReader r(in);
    char dst[10];
    EXPECT_THAT(std::string(r.Read(dst, 10, 10).message()),
                HasSubstr("at offset 3: the file ends 7 bytes early"));
  }
}

}  // namespace
}  // namespace sluice
