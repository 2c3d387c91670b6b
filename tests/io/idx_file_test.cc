#include "io/idx_file.h"

#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/file_util.h"

namespace sluice {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "idx_" + std::to_string(getpid()) + "_" + name;
}

// An IDX file written byte by byte, independent of the reader.
std::string Header(unsigned char type, std::vector<uint32_t> dims) {
  std::string out = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    out.push_back(static_cast<char>(d >> 24));
    out.push_back(static_cast<char>(d >> 16));
    out.push_back(static_cast<char>(d >> 8));
    out.push_back(static_cast<char>(d));
  }
  return out;
}

void WriteGzip(const std::string& path, const std::string& bytes) {
  gzFile out = gzopen(path.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(gzwrite(out, bytes.data(), bytes.size()), static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(out), Z_OK);
}

TEST(IdxFileTest, ReadsGzippedImages) {
  // Two 2x3 images, values 0..11, and a 300-wide dimension to exercise every header byte.
  std::string bytes = Header(0x08, {2, 2, 3});
  for (int i = 0; i < 12; ++i) bytes.push_back(static_cast<char>(i * 20));
  std::string path = TempPath("images.gz");
  WriteGzip(path, bytes);
  absl::StatusOr<IdxFile> file = ReadIdxFile(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->type, IdxType::kUint8);
  EXPECT_EQ(file->dims, (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(file->num_elements(), 12);
  EXPECT_EQ(file->row_elements(), 6);
  ASSERT_EQ(file->data.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(static_cast<unsigned char>(file->data[i]), i * 20);
  std::remove(path.c_str());
}

TEST(IdxFileTest, ReadsUncompressedAndBigDims) {
  std::string bytes = Header(0x08, {70000});
  for (int i = 0; i < 70000; ++i) bytes.push_back(static_cast<char>(i % 10));
  std::string path = TempPath("labels");
  {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
  }
  absl::StatusOr<IdxFile> file = ReadIdxFile(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->dims, (std::vector<int64_t>{70000}));
  EXPECT_EQ(file->row_elements(), 1);
  EXPECT_EQ(file->data[69999], 69999 % 10);
  std::remove(path.c_str());
}

TEST(IdxFileTest, MultiByteTypeSizes) {
  std::string bytes = Header(0x0C, {3});
  bytes += std::string("\x00\x00\x01\x00\x00\x00\x00\x02\xff\xff\xff\xff", 12);
  absl::StatusOr<IdxFile> file = ParseIdx(bytes);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->type, IdxType::kInt32);
  EXPECT_EQ(file->data.size(), 12u);
}

TEST(IdxFileTest, RejectsBadMagic) {
  std::string bytes = Header(0x08, {1});
  bytes[1] = 1;
  bytes.push_back(0);
  absl::StatusOr<IdxFile> file = ParseIdx(bytes, "x.idx");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("x.idx: bad IDX magic"), std::string::npos)
      << file.status();
}

TEST(IdxFileTest, RejectsUnknownType) {
  std::string bytes = Header(0x07, {1}) + "a";
  absl::StatusOr<IdxFile> file = ParseIdx(bytes);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("unknown IDX type code 7"), std::string::npos);
}

TEST(IdxFileTest, RejectsWrongDataLength) {
  std::string bytes = Header(0x08, {2, 2}) + "abc";
  absl::StatusOr<IdxFile> file = ParseIdx(bytes, "f");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(
      file.status().message().find("expected 4 bytes of data after the 12-byte header, got 3"),
      std::string::npos)
      << file.status();
  EXPECT_FALSE(ParseIdx(Header(0x08, {2, 2}).substr(0, 9)).ok());  // Truncated header.
}

TEST(IdxFileTest, MissingFileIsNotFound) {
  absl::StatusOr<IdxFile> file = ReadIdxFile(TempPath("missing.gz"));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
}

TEST(IdxFileTest, TruncatedGzipIsAnError) {
  std::string bytes = Header(0x08, {1000});
  for (int i = 0; i < 1000; ++i) bytes.push_back(static_cast<char>(i * 7));
  std::string path = TempPath("trunc.gz");
  WriteGzip(path, bytes);
  const std::string gz = testing::ReadFile(path);
  testing::WriteFile(path, gz.substr(0, gz.size() / 2));
  EXPECT_FALSE(ReadIdxFile(path).ok());
  std::remove(path.c_str());
}

// A small .gz that inflates far past what its header declares (a "gzip bomb"): the reader
// stops at the first block beyond the declared size instead of inflating it all into memory.
TEST(IdxFileTest, DataPastTheDeclaredSizeStopsTheInflateEarly) {
  std::string bytes = Header(0x08, {10});
  bytes.append(64 << 20, '\0');  // 64 MiB of zeros compress to ~64 KB
  const std::string path = TempPath("bomb.gz");
  WriteGzip(path, bytes);
  absl::StatusOr<IdxFile> file = ReadIdxFile(path);
  EXPECT_EQ(file.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(file.status().message().find("more than the 18 bytes its header declares"),
            std::string::npos)
      << file.status();
  std::remove(path.c_str());
}

TEST(IdxFileTest, AHeaderDeclaringMoreThanMaxBytesIsResourceExhausted) {
  const std::string path = TempPath("huge.gz");
  WriteGzip(path, Header(0x0D, {60000, 60000, 3}) + std::string(100, '\1'));  // 43 GB of float32
  absl::StatusOr<IdxFile> file = ReadIdxFile(path);
  EXPECT_EQ(file.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(file.status().message().find("max_bytes (4294967296)"), std::string::npos)
      << file.status();
  // Within a raised limit, the same file is only short.
  file = ReadIdxFile(path, int64_t{1} << 40);
  EXPECT_EQ(file.status().code(), absl::StatusCode::kDataLoss);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sluice
