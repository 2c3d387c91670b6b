#include "io/input_stream.h"

#include <algorithm>
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

// Serves a string in short, irregular pieces, as a pipe or a signal-interrupted read would.
class ChoppyStream : public InputStream {
 public:
  ChoppyStream(std::string data, size_t max_piece)
      : data_(std::move(data)), max_piece_(max_piece) {}
  absl::StatusOr<size_t> Read(char* dst, size_t n) override {
    const size_t take = std::min({n, data_.size() - pos_, 1 + rng_() % max_piece_});
    std::copy_n(data_.data() + pos_, take, dst);
    pos_ += take;
    ++reads_;
    return take;
  }
  int reads() const { return reads_; }

 private:
  std::string data_;
  size_t max_piece_;
  size_t pos_ = 0;
  int reads_ = 0;
  std::mt19937 rng_{9};
};

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 7 + i / 251);
  return s;
}

// ReadUpTo gathers a stream's short reads until `n` bytes or the end.
TEST(ReadUpToTest, GathersShortReadsUntilFullOrTheEnd) {
  const std::string data = Pattern(5000);
  ChoppyStream in(data, 37);
  std::string got(3000, '\0');
  absl::StatusOr<size_t> n = ReadUpTo(in, got.data(), got.size());
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 3000u);
  EXPECT_EQ(got, data.substr(0, 3000));
  EXPECT_GT(in.reads(), 1);
  n = ReadUpTo(in, got.data(), got.size());  // only 2000 are left
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 2000u);
  EXPECT_EQ(got.substr(0, 2000), data.substr(3000));
}

TEST(BufferedInputStreamTest, EnsureConsumeAndReadFullyOverShortReads) {
  const std::string data = Pattern(100'000);
  BufferedInputStream in(std::make_unique<ChoppyStream>(data, 13), 1024);
  std::mt19937 rng(2);
  size_t pos = 0;
  while (pos < data.size()) {
    if (rng() % 2) {
      const size_t want = 1 + rng() % 64;
      auto avail = in.Ensure(want);
      ASSERT_TRUE(avail.ok());
      ASSERT_GE(*avail, std::min(want, data.size() - pos));
      const size_t take = std::min(want, *avail);
      ASSERT_EQ(std::string(in.data(), take), data.substr(pos, take));
      in.Consume(take);
      pos += take;
    } else {
      const size_t want = rng() % 3000;  // Sometimes past the buffer's half: direct reads.
      std::string out(want, '?');
      auto got = in.ReadFully(out.data(), want);
      ASSERT_TRUE(got.ok());
      ASSERT_EQ(*got, std::min(want, data.size() - pos));
      ASSERT_EQ(out.substr(0, *got), data.substr(pos, *got));
      pos += *got;
    }
    ASSERT_EQ(in.position(), pos);
  }
  EXPECT_EQ(*in.Ensure(12), 0u);
  char c;
  EXPECT_EQ(*in.ReadFully(&c, 1), 0u);
}

TEST(BufferedInputStreamTest, LargeReadsBypassTheBuffer) {
  const std::string data = Pattern(1 << 20);
  auto source = std::make_unique<ChoppyStream>(data, 1 << 20);
  ChoppyStream* raw = source.get();
  BufferedInputStream in(std::move(source), 4096);
  std::string out(data.size(), '\0');
  ASSERT_EQ(*in.ReadFully(out.data(), out.size()), data.size());
  EXPECT_EQ(out, data);
  // Through a 4 KiB buffer a megabyte would take >= 256 reads; straight through it takes few.
  EXPECT_LT(raw->reads(), 64);
}

TEST(BufferedInputStreamTest, SkipWithinBuffer) {
  const std::string data = Pattern(10'000);
  BufferedInputStream in(std::make_unique<ChoppyStream>(data, 10'000), 1024);
  ASSERT_GE(*in.Ensure(100), 100u);
  const size_t window = in.available();
  in.Consume(50);
  EXPECT_TRUE(in.SkipWithinBuffer(10));  // Backwards, still buffered.
  EXPECT_EQ(in.position(), 10u);
  EXPECT_EQ(in.data()[0], data[10]);
  EXPECT_TRUE(in.SkipWithinBuffer(window));  // The end of the window.
  EXPECT_FALSE(in.SkipWithinBuffer(window + 1));
  EXPECT_EQ(in.position(), window);
}

TEST(ZlibInputStreamTest, InflatesOverShortReads) {
  // "hello hello hello" as `gzip -n` compresses it.
  const std::string gzip_bytes(
      "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcb\x48\xcd\xc9"
      "\xc9\x57\xc8\x40\x90\x00\x80\x88\xf9\xe5\x11\x00\x00\x00",
      28);
  for (size_t piece : {1, 3, 100}) {
    auto z = ZlibInputStream::Create(std::make_unique<ChoppyStream>(gzip_bytes, piece),
                                     Compression::kGzip, "vec.gz", 4);
    ASSERT_TRUE(z.ok());
    std::string out;
    char buf[5];
    while (true) {
      auto got = (*z)->Read(buf, sizeof(buf));
      ASSERT_TRUE(got.ok()) << got.status();
      if (*got == 0) break;
      out.append(buf, *got);
    }
    EXPECT_EQ(out, "hello hello hello");
  }
}

TEST(FileInputStreamTest, MissingFileAndDirectory) {
  auto missing = FileInputStream::Open("/nonexistent/dir/file");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), ::testing::HasSubstr("/nonexistent/dir/file"));
  auto dir = FileInputStream::Open(::testing::TempDir());
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace sluice
