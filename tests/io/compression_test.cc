#include "io/compression.h"

#include <zlib.h>

#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(CompressionTest, Names) {
  EXPECT_EQ(*CompressionFromName(""), Compression::kNone);
  EXPECT_EQ(*CompressionFromName("NONE"), Compression::kNone);
  EXPECT_EQ(*CompressionFromName("GZIP"), Compression::kGzip);
  EXPECT_EQ(*CompressionFromName("gZiP"), Compression::kGzip);
  EXPECT_EQ(*CompressionFromName("ZLIB"), Compression::kZlib);
  const auto bad = CompressionFromName("lz4");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("lz4"));
  for (const auto c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    EXPECT_EQ(*CompressionFromName(CompressionName(c)), c);
  }
  EXPECT_EQ(CompressionName(Compression::kGzip), "gzip");
}

TEST(CompressionTest, GuessFromThePath) {
  EXPECT_EQ(GuessCompression("a/b.tfrecord.gz"), Compression::kGzip);
  EXPECT_EQ(GuessCompression("b.zz"), Compression::kZlib);
  EXPECT_EQ(GuessCompression("b.zlib"), Compression::kZlib);
  EXPECT_EQ(GuessCompression("b.tfrecord"), Compression::kNone);
  EXPECT_EQ(GuessCompression("b.gzip"), Compression::kNone);
  EXPECT_EQ(GuessCompression("gz"), Compression::kNone);
}

// Decompresses with zlib's one-shot inflate: an independent check of the streamed output.
std::string Inflate(const std::string& compressed, int window_bits) {
  z_stream s{};
  EXPECT_EQ(inflateInit2(&s, window_bits), Z_OK);
  std::string out;
  char buf[1 << 16];
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  s.avail_in = static_cast<uInt>(compressed.size());
  int rc;
  do {
    s.next_out = reinterpret_cast<Bytef*>(buf);
    s.avail_out = sizeof(buf);
    rc = inflate(&s, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - s.avail_out);
  } while (rc == Z_OK);
  EXPECT_EQ(rc, Z_STREAM_END);
  EXPECT_EQ(s.avail_in, 0u);
  inflateEnd(&s);
  return out;
}

TEST(CompressionTest, CompressorWritesGzipAndZlibStreams) {
  std::mt19937 rng(5);
  std::string input;
  static const char* const kWords[] = {"alpha ", "beta ", "gamma ", "delta ", "zeta "};
  while (input.size() < 300'000) {
    input += kWords[rng() % 5];
    if (rng() % 8 == 0) input.push_back(static_cast<char>(rng()));
  }
  for (const auto c : {Compression::kGzip, Compression::kZlib}) {
    std::string out;
    int pieces = 0;
    auto z = ZlibCompressor::Create(
        c, -1,
        [&](absl::string_view bytes) {
          EXPECT_LE(bytes.size(), 4096u);
          ++pieces;
          out.append(bytes.data(), bytes.size());
          return absl::OkStatus();
        },
        /*buffer_size=*/4096);
    ASSERT_TRUE(z.ok()) << z.status();
    // Uneven slices, one empty.
    size_t pos = 0;
    for (size_t step : {0, 1, 1000, 50'000, 1, 200'000}) {
      ASSERT_TRUE((*z)->Write(absl::string_view(input).substr(pos, step)).ok());
      pos += step;
    }
    ASSERT_TRUE((*z)->Write(absl::string_view(input).substr(pos)).ok());
    ASSERT_TRUE((*z)->Finish().ok());
    EXPECT_GT(pieces, 1);
    EXPECT_LT(out.size(), input.size() / 2);
    if (c == Compression::kGzip) {
      EXPECT_EQ(out.substr(0, 2), "\x1f\x8b");
    }
    EXPECT_EQ(Inflate(out, ZlibWindowBits(c)), input);
    EXPECT_EQ((*z)->Write("x").code(), absl::StatusCode::kFailedPrecondition);
  }
}

TEST(CompressionTest, CompressorPassesSinkErrorsOn) {
  auto z = ZlibCompressor::Create(Compression::kGzip, 0, [](absl::string_view) {
    return absl::ResourceExhaustedError("disk full");
  });
  ASSERT_TRUE(z.ok());
  absl::Status s = (*z)->Write(std::string(1 << 20, 'x'));
  if (s.ok()) s = (*z)->Finish();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
}

TEST(CompressionTest, CompressorRejectsBadArguments) {
  auto sink = [](absl::string_view) { return absl::OkStatus(); };
  EXPECT_EQ(ZlibCompressor::Create(Compression::kGzip, 10, sink).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ZlibCompressor::Create(Compression::kNone, -1, sink).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
