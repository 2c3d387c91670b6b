#include "ops/decode_jpeg.h"

#include <sys/resource.h>
#include <turbojpeg.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/base/config.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/crop.h"
#include "ops/encode_jpeg.h"
#include "tests/ops/image_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::MakeImage;
using ::sluice::testing::MaxAbsDiff;
using ::sluice::testing::PhotoJpegs;
using ::sluice::testing::TurboDecode;
using ::testing::HasSubstr;

// The photos re-encoded in other layouts (from TurboJPEG's decode, by TurboJPEG's encoder), so
// that cropping is checked on 4:4:4, 4:2:2, progressive and grayscale JPEGs as well.
const std::vector<std::string>& OtherLayouts() {
  static const std::vector<std::string>* out = [] {
    auto* v = new std::vector<std::string>;
    const Tensor rgb = TurboDecode(PhotoJpegs()[0], TJPF_RGB);
    const Tensor gray = TurboDecode(PhotoJpegs()[2], TJPF_GRAY);
    for (const auto& [image, options] : std::vector<std::pair<Tensor, EncodeJpegOptions>>{
             {rgb, {.quality = 90, .subsampling = ChromaSubsampling::k444}},
             {rgb, {.quality = 90, .subsampling = ChromaSubsampling::k422}},
             {rgb, {.quality = 90, .progressive = true}},
             {gray, {.quality = 90}},
             {gray, {.quality = 90, .progressive = true}}}) {
      absl::StatusOr<std::string> jpeg = EncodeJpeg(image, options);
      EXPECT_TRUE(jpeg.ok()) << jpeg.status();
      v->push_back(*jpeg);
    }
    return v;
  }();
  return *out;
}

std::vector<std::string> AllJpegs() {
  std::vector<std::string> all = PhotoJpegs();
  for (const std::string& j : OtherLayouts()) all.push_back(j);
  return all;
}

TEST(DecodeJpegTest, PhotosAreThere) {
  ASSERT_EQ(PhotoJpegs().size(), 3u);
  for (const std::string& j : PhotoJpegs()) {
    // Sizes from images3.expected.json.
    EXPECT_THAT(j.size(), ::testing::AnyOf(57517u, 58200u, 68135u));
  }
}

TEST(DecodeJpegTest, HeaderMatchesTurboJpeg) {
  for (const std::string& jpeg : AllJpegs()) {
    tjhandle tj = tjInitDecompress();
    int w = 0, h = 0, subsamp = 0, colorspace = 0;
    ASSERT_EQ(tjDecompressHeader3(tj, reinterpret_cast<const unsigned char*>(jpeg.data()),
                                  jpeg.size(), &w, &h, &subsamp, &colorspace),
              0);
    tjDestroy(tj);
    auto header = ReadJpegHeader(jpeg);
    ASSERT_TRUE(header.ok()) << header.status();
    EXPECT_EQ(header->height, h);
    EXPECT_EQ(header->width, w);
    EXPECT_EQ(header->channels, colorspace == TJCS_GRAY ? 1 : 3);
  }
  auto h0 = ReadJpegHeader(PhotoJpegs()[0]);
  auto h2 = ReadJpegHeader(PhotoJpegs()[2]);
  ASSERT_TRUE(h0.ok() && h2.ok());
  EXPECT_EQ(h0->height * h0->width, 500 * 375);
  EXPECT_EQ(h2->height * h2->width, 500 * 375);
  EXPECT_NE(h0->height, h2->height);  // One landscape, one portrait.
}

TEST(DecodeJpegTest, FullDecodeEqualsTurboJpeg) {
  for (const std::string& jpeg : AllJpegs()) {
    for (int channels : {0, 1, 3}) {
      auto image = DecodeJpeg(jpeg, {.channels = channels});
      ASSERT_TRUE(image.ok()) << image.status();
      auto header = ReadJpegHeader(jpeg);
      const int expect_channels = channels == 0 ? header->channels : channels;
      const Tensor want = TurboDecode(jpeg, expect_channels == 1 ? TJPF_GRAY : TJPF_RGB);
      EXPECT_EQ(image->shape(), want.shape());
      EXPECT_EQ(MaxAbsDiff(*image, want), 0) << "channels=" << channels;
    }
  }
}

TEST(DecodeJpegTest, GrayscaleJpegToRgbReplicatesLuma) {
  const std::string& gray_jpeg = OtherLayouts()[3];
  auto gray = DecodeJpeg(gray_jpeg);
  auto rgb = DecodeJpeg(gray_jpeg, {.channels = 3});
  ASSERT_TRUE(gray.ok() && rgb.ok());
  ASSERT_EQ(gray->dim(2), 1);
  ASSERT_EQ(rgb->dim(2), 3);
  for (int64_t y = 0; y < gray->dim(0); y += 7) {
    for (int64_t x = 0; x < gray->dim(1); x += 5) {
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(testing::At(*rgb, y, x, c), testing::At(*gray, y, x, 0));
      }
    }
  }
}

TEST(DecodeJpegTest, ScaledDecodeEqualsTurboJpegScaled) {
  for (const std::string& jpeg : AllJpegs()) {
    auto header = ReadJpegHeader(jpeg);
    ASSERT_TRUE(header.ok());
    for (int denom : {1, 2, 4, 8}) {
      for (int channels : {1, 3}) {
        auto image = DecodeJpeg(jpeg, {.channels = channels, .scale_denom = denom});
        ASSERT_TRUE(image.ok()) << image.status();
        EXPECT_EQ(image->dim(0), JpegScaledSize(header->height, denom));
        EXPECT_EQ(image->dim(1), JpegScaledSize(header->width, denom));
        const Tensor want = TurboDecode(jpeg, channels == 1 ? TJPF_GRAY : TJPF_RGB, denom);
        EXPECT_EQ(MaxAbsDiff(*image, want), 0) << "1/" << denom << " channels=" << channels;
      }
    }
  }
}

TEST(DecodeJpegTest, FastDctEqualsTurboJpegFastDct) {
  const std::string& jpeg = PhotoJpegs()[1];
  auto fast = DecodeJpeg(jpeg, {.fast_dct = true});
  auto accurate = DecodeJpeg(jpeg);
  ASSERT_TRUE(fast.ok() && accurate.ok());
  EXPECT_EQ(MaxAbsDiff(*fast, TurboDecode(jpeg, TJPF_RGB, 1, TJFLAG_FASTDCT)), 0);
  // The two IDCTs really differ, but only slightly.
  EXPECT_GT(MaxAbsDiff(*fast, *accurate), 0);
  EXPECT_LT(testing::MeanAbsDiff(*fast, *accurate), 2.0);
}

// Windows to try on an h x w image: the whole image, every edge, all four 1x1 corners, thin rows
// and columns, and random windows of every size.
std::vector<CropWindow> TestWindows(int64_t h, int64_t w, uint64_t seed, int random_count) {
  std::vector<CropWindow> windows = {
      {0, 0, h, w},
      {0, 0, 1, 1},
      {0, w - 1, 1, 1},
      {h - 1, 0, 1, 1},
      {h - 1, w - 1, 1, 1},
      {0, 0, h, 1},
      {0, w - 1, h, 1},
      {0, 0, 1, w},
      {h - 1, 0, 1, w},
      {0, 0, h / 2, w / 2},
      {h / 2, w / 2, h - h / 2, w - w / 2},
      {0, 8, h, 16},
      {16, 0, 16, w},
      {7, 15, 9, 17},
      {h / 3, 0, h / 3, w},
  };
  std::mt19937_64 rng(seed);
  for (int i = 0; i < random_count; ++i) {
    const int64_t wh = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(h));
    const int64_t ww = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(w));
    const int64_t y = static_cast<int64_t>(rng() % static_cast<uint64_t>(h - wh + 1));
    const int64_t x = static_cast<int64_t>(rng() % static_cast<uint64_t>(w - ww + 1));
    windows.push_back({y, x, wh, ww});
  }
  return windows;
}

TEST(DecodeJpegTest, CropDecodeEqualsFullDecodeThenCrop) {
  int checked = 0;
  const std::vector<std::string> all = AllJpegs();
  for (size_t j = 0; j < all.size(); ++j) {
    const std::string& jpeg = all[j];
    for (int channels : {1, 3}) {
      auto full = DecodeJpeg(jpeg, {.channels = channels});
      ASSERT_TRUE(full.ok()) << full.status();
      const Tensor want_full = TurboDecode(jpeg, channels == 1 ? TJPF_GRAY : TJPF_RGB);
      for (const CropWindow& window :
           TestWindows(full->dim(0), full->dim(1), j * 10 + channels, 60)) {
        auto cropped = DecodeJpeg(jpeg, {.channels = channels, .crop = window});
        ASSERT_TRUE(cropped.ok()) << window.DebugString() << ": " << cropped.status();
        auto want = Crop(want_full, window);
        ASSERT_TRUE(want.ok());
        ASSERT_EQ(cropped->shape(), want->shape()) << window.DebugString();
        ASSERT_LE(MaxAbsDiff(*cropped, *want), 0)
            << "jpeg " << j << " channels " << channels << " window " << window.DebugString();
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 8 * 2 * 75);
}

// The window inside DecodeJpegCovering's result equals DecodeJpeg's crop, whatever columns it
// keeps beside it, full size and scaled.
TEST(DecodeJpegTest, CoveringDecodeHoldsTheWindowAt_window_x) {
  const std::vector<std::string> all = AllJpegs();
  int wider = 0;
  for (size_t j = 0; j < all.size(); ++j) {
    for (int denom : {1, 2}) {
      auto full = DecodeJpeg(all[j], {.channels = 3, .scale_denom = denom});
      ASSERT_TRUE(full.ok()) << full.status();
      for (const CropWindow& window :
           TestWindows(full->dim(0), full->dim(1), 300 + j * 10 + denom, 20)) {
        const DecodeJpegOptions options{.channels = 3, .crop = window, .scale_denom = denom};
        auto want = DecodeJpeg(all[j], options);
        ASSERT_TRUE(want.ok()) << want.status();
        int64_t x = -1;
        auto covering = DecodeJpegCovering(all[j], options, &x);
        ASSERT_TRUE(covering.ok()) << covering.status();
        ASSERT_EQ(covering->dim(0), window.height);
        ASSERT_GE(x, 0);
        ASSERT_LE(x + window.width, covering->dim(1)) << window.DebugString();
        wider += covering->dim(1) > window.width;
        auto inside = Crop(
            *covering, CropWindow{.y = 0, .x = x, .height = window.height, .width = window.width});
        ASSERT_TRUE(inside.ok());
        EXPECT_TRUE(inside->Equals(*want)) << "jpeg " << j << " window " << window.DebugString();
      }
    }
  }
  EXPECT_GT(wider, 0);  // Columns beside the window were kept, not copied out.
}

TEST(DecodeJpegTest, MemoryFromAPoolIsReused) {
  auto pool = BufferPool::Create(1);
  const std::string jpeg = AllJpegs()[0];
  auto want = DecodeJpeg(jpeg);
  ASSERT_TRUE(want.ok());
  auto a = DecodeJpeg(jpeg, {.pool = pool.get()});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->Equals(*want));
  const void* memory = a->raw_data();
  *a = Tensor();  // Dropped: back to the pool.
  EXPECT_EQ(pool->free_blocks(), 1u);
  auto b = DecodeJpeg(jpeg, {.pool = pool.get()});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->raw_data(), memory);
  EXPECT_TRUE(b->Equals(*want));
}

TEST(DecodeJpegTest, ScaledCropEqualsScaledThenCrop) {
  const std::vector<std::string> all = AllJpegs();
  for (size_t j = 0; j < all.size(); ++j) {
    for (int denom : {2, 4, 8}) {
      for (int channels : {1, 3}) {
        const Tensor scaled = TurboDecode(all[j], channels == 1 ? TJPF_GRAY : TJPF_RGB, denom);
        for (const CropWindow& window :
             TestWindows(scaled.dim(0), scaled.dim(1), 100 + j * 10 + denom, 20)) {
          auto cropped =
              DecodeJpeg(all[j], {.channels = channels, .crop = window, .scale_denom = denom});
          ASSERT_TRUE(cropped.ok()) << window.DebugString() << ": " << cropped.status();
          auto want = Crop(scaled, window);
          ASSERT_TRUE(want.ok());
          ASSERT_LE(MaxAbsDiff(*cropped, *want), 0)
              << "jpeg " << j << " 1/" << denom << " window " << window.DebugString();
        }
      }
    }
  }
}

TEST(DecodeJpegTest, CmykJpegDecodesToRgb) {
  // TurboJPEG encodes CMYK pixels as an Adobe YCCK JPEG (inverted CMYK, the Photoshop convention).
  const int h = 40, w = 56;
  std::vector<uint8_t> cmyk(h * w * 4);
  for (int i = 0; i < h * w * 4; ++i) cmyk[i] = static_cast<uint8_t>((i * 37 + (i / 4) * 3) % 256);
  tjhandle tj = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(tjCompress2(tj, cmyk.data(), w, 0, h, TJPF_CMYK, &buf, &size, TJSAMP_444, 95, 0), 0)
      << tjGetErrorStr2(tj);
  tjDestroy(tj);
  const std::string jpeg(reinterpret_cast<char*>(buf), size);
  tjFree(buf);

  const Tensor decoded_cmyk = TurboDecode(jpeg, TJPF_CMYK);
  auto header = ReadJpegHeader(jpeg);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->channels, 3);
  auto rgb = DecodeJpeg(jpeg);
  ASSERT_TRUE(rgb.ok()) << rgb.status();
  ASSERT_EQ(rgb->shape(), (Shape{h, w, 3}));
  auto gray = DecodeJpeg(jpeg, {.channels = 1});
  ASSERT_TRUE(gray.ok()) << gray.status();
  auto crop = DecodeJpeg(jpeg, {.crop = CropWindow{5, 9, 20, 30}});
  ASSERT_TRUE(crop.ok()) << crop.status();
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const uint8_t* p = decoded_cmyk.data<uint8_t>() + (y * w + x) * 4;
      const int k = p[3];
      const int r = p[0] * k / 255, g = p[1] * k / 255, b = p[2] * k / 255;
      ASSERT_EQ(testing::At(*rgb, y, x, 0), r);
      ASSERT_EQ(testing::At(*rgb, y, x, 1), g);
      ASSERT_EQ(testing::At(*rgb, y, x, 2), b);
      ASSERT_EQ(testing::At(*gray, y, x, 0), (r * 19595 + g * 38470 + b * 7471 + 32768) >> 16);
      if (y >= 5 && y < 25 && x >= 9 && x < 39) {
        for (int c = 0; c < 3; ++c)
          ASSERT_EQ(testing::At(*crop, y - 5, x - 9, c), testing::At(*rgb, y, x, c));
      }
    }
  }
}

TEST(DecodeJpegTest, ChooseScaleDenom) {
  EXPECT_EQ(ChooseScaleDenom(375, 500, 224, 224), 1);
  EXPECT_EQ(ChooseScaleDenom(448, 448, 224, 224), 2);
  EXPECT_EQ(ChooseScaleDenom(447, 448, 224, 224), 1);
  EXPECT_EQ(ChooseScaleDenom(896, 1000, 224, 224), 4);
  EXPECT_EQ(ChooseScaleDenom(1792, 1792, 224, 224), 8);
  EXPECT_EQ(ChooseScaleDenom(4000, 4000, 224, 224), 8);  // 8 is the largest.
  EXPECT_EQ(ChooseScaleDenom(4000, 500, 224, 224), 2);   // The narrow side decides.
  EXPECT_EQ(ChooseScaleDenom(100, 100, 224, 224), 1);    // Upsampling anyway.
  EXPECT_EQ(ChooseScaleDenom(64, 128, 8, 16), 8);
}

// --- Errors -----------------------------------------------------------------------------------

TEST(DecodeJpegTest, EmptyAndNonJpegAreInvalidArgument) {
  for (const std::string& bad : {std::string(), std::string("\xff"), std::string("GIF89a....."),
                                 std::string("\x89PNG\r\n\x1a\n", 8)}) {
    auto image = DecodeJpeg(bad);
    EXPECT_EQ(image.status().code(), absl::StatusCode::kInvalidArgument) << image.status();
    EXPECT_THAT(image.status().message(), HasSubstr("not a JPEG"));
    auto header = ReadJpegHeader(bad);
    EXPECT_EQ(header.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(header.status().message(), HasSubstr("ReadJpegHeader: "));
  }
}

TEST(DecodeJpegTest, RandomGarbageIsAnError) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    std::string garbage(1 + rng() % 4000, '\0');
    for (char& ch : garbage) ch = static_cast<char>(rng());
    if (trial % 2 == 0 && garbage.size() >= 2) {  // Past the SOI check, into libjpeg.
      garbage[0] = '\xff';
      garbage[1] = '\xd8';
    }
    auto image = DecodeJpeg(garbage);
    ASSERT_FALSE(image.ok()) << "trial " << trial;
    EXPECT_THAT(image.status().code(),
                ::testing::AnyOf(absl::StatusCode::kInvalidArgument, absl::StatusCode::kDataLoss));
    EXPECT_THAT(image.status().message(), HasSubstr("DecodeJpeg"));
  }
}

TEST(DecodeJpegTest, CorruptedPhotoNeverCrashes) {
  // Bytes flipped in the entropy-coded data or the header: an error or (libjpeg recovers from
  // many) an image of the right size.
  const std::string& photo = PhotoJpegs()[0];
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 100; ++trial) {
    std::string bad = photo;
    for (int k = 0; k < 10; ++k) bad[2 + rng() % (bad.size() - 2)] = static_cast<char>(rng());
    auto image = DecodeJpeg(
        bad, {.crop = trial % 2 ? std::optional<CropWindow>({50, 60, 70, 80}) : std::nullopt});
    if (image.ok()) {
      EXPECT_EQ(image->dim(2), 3);
    } else {
      EXPECT_THAT(image.status().code(), ::testing::AnyOf(absl::StatusCode::kInvalidArgument,
                                                          absl::StatusCode::kDataLoss));
    }
  }
}

TEST(DecodeJpegTest, TruncatedIsDataLoss) {
  for (const std::string& jpeg : {PhotoJpegs()[0], OtherLayouts()[2]}) {  // Baseline, progressive.
    const size_t n = jpeg.size();
    for (size_t length : {size_t{2}, size_t{4}, size_t{20}, size_t{100}, size_t{300}, size_t{700},
                          n / 4, n / 2, 3 * n / 4, n - 100, n - 10}) {
      const std::string cut = jpeg.substr(0, length);
      auto image = DecodeJpeg(cut);
      ASSERT_FALSE(image.ok()) << "length " << length;
      EXPECT_EQ(image.status().code(), absl::StatusCode::kDataLoss) << image.status();
      EXPECT_THAT(image.status().message(), HasSubstr("truncated JPEG"));
      EXPECT_THAT(image.status().message(), HasSubstr(absl::StrCat(length, "-byte")));
    }
  }
}

// Without its EOI marker alone: libjpeg's Huffman reader reads ahead past the last scan's data, so
// even the whole image cannot be decoded (TensorFlow fails the same way unless asked to recover).
TEST(DecodeJpegTest, MissingOnlyTheEoiMarkerIsDataLoss) {
  const std::string jpeg = PhotoJpegs()[0];
  ASSERT_EQ(jpeg.substr(jpeg.size() - 2), "\xff\xd9");
  auto image = DecodeJpeg(jpeg.substr(0, jpeg.size() - 2));
  ASSERT_FALSE(image.ok());
  EXPECT_EQ(image.status().code(), absl::StatusCode::kDataLoss) << image.status();
}

TEST(DecodeJpegTest, CropAboveTruncationNeverReadsTheMissingData) {
  // A sequential JPEG cut at 60%: a window in the top rows decodes (the rows below it are never
  // read), and equals the intact JPEG's pixels; a window at the bottom is truncated.
  const std::string& jpeg = PhotoJpegs()[1];
  const std::string cut = jpeg.substr(0, jpeg.size() * 6 / 10);
  const CropWindow top{0, 10, 32, 100};
  auto from_cut = DecodeJpeg(cut, {.crop = top});
  auto from_whole = DecodeJpeg(jpeg, {.crop = top});
  ASSERT_TRUE(from_cut.ok()) << from_cut.status();
  ASSERT_TRUE(from_whole.ok());
  EXPECT_EQ(MaxAbsDiff(*from_cut, *from_whole), 0);
  auto header = ReadJpegHeader(jpeg);
  const CropWindow bottom{header->height - 10, 0, 10, 20};
  EXPECT_EQ(DecodeJpeg(cut, {.crop = bottom}).status().code(), absl::StatusCode::kDataLoss);
}

// A copy of `jpeg` whose SOF marker declares height x width.
std::string PatchDimensions(const std::string& jpeg, int height, int width) {
  std::string out = jpeg;
  for (size_t i = 2; i + 9 < out.size(); ++i) {
    const auto b = static_cast<uint8_t>(out[i + 1]);
    if (static_cast<uint8_t>(out[i]) == 0xFF && (b == 0xC0 || b == 0xC1 || b == 0xC2)) {
      // FF Cx, length (2), precision (1), height (2), width (2).
      out[i + 5] = static_cast<char>(height >> 8);
      out[i + 6] = static_cast<char>(height & 0xFF);
      out[i + 7] = static_cast<char>(width >> 8);
      out[i + 8] = static_cast<char>(width & 0xFF);
      return out;
    }
  }
  ADD_FAILURE() << "no SOF marker";
  return out;
}

TEST(DecodeJpegTest, HugeHeaderIsRejectedByMaxPixels) {
  const std::string huge = PatchDimensions(PhotoJpegs()[0], 60000, 60000);
  auto header = ReadJpegHeader(huge);  // The header alone is fine to read.
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->height, 60000);
  EXPECT_EQ(header->width, 60000);
  for (const DecodeJpegOptions& options :
       {DecodeJpegOptions{}, DecodeJpegOptions{.crop = CropWindow{0, 0, 10, 10}},
        DecodeJpegOptions{.scale_denom = 8}}) {
    auto image = DecodeJpeg(huge, options);
    EXPECT_EQ(image.status().code(), absl::StatusCode::kInvalidArgument) << image.status();
    EXPECT_THAT(image.status().message(), HasSubstr("60000x60000"));
    EXPECT_THAT(image.status().message(), HasSubstr("max_pixels"));
  }
  // The limit is configurable: a real photo over a small limit.
  auto small = DecodeJpeg(PhotoJpegs()[0], {.max_pixels = 500 * 375 - 1});
  EXPECT_EQ(small.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(DecodeJpeg(PhotoJpegs()[0], {.max_pixels = 500 * 375}).ok());
}

#if !defined(ABSL_HAVE_ADDRESS_SANITIZER) && !defined(ABSL_HAVE_THREAD_SANITIZER)
// Runs in the death test's child: limits the address space to 1 GiB, decodes the patched JPEGs and
// exits 0 when both are rejected.
[[noreturn]] void DecodeHugeUnderMemoryLimit() {
  struct rlimit limit;
  limit.rlim_cur = limit.rlim_max = rlim_t{1} << 30;
  setrlimit(RLIMIT_AS, &limit);
  auto image = DecodeJpeg(PatchDimensions(PhotoJpegs()[0], 60000, 60000));
  DecodeJpegOptions scaled;
  scaled.scale_denom = 8;
  auto progressive = DecodeJpeg(PatchDimensions(OtherLayouts()[2], 60000, 60000), scaled);
  const bool ok = image.status().code() == absl::StatusCode::kInvalidArgument &&
                  progressive.status().code() == absl::StatusCode::kInvalidArgument;
  std::exit(ok ? 0 : 1);
}

TEST(DecodeJpegDeathTest, HugeHeaderAllocatesNothingLarge) {
  // With 1 GiB of address space, a 60000x60000x3 allocation (10 GB) would fail and abort; the
  // rejection must come first. (Sanitizers reserve terabytes of shadow memory, so this runs only
  // in plain builds.)
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  (void)OtherLayouts();  // Built before the limit.
  EXPECT_EXIT(DecodeHugeUnderMemoryLimit(), ::testing::ExitedWithCode(0), "");
}
#endif

TEST(DecodeJpegTest, InvalidOptions) {
  const std::string& jpeg = PhotoJpegs()[0];
  auto header = ReadJpegHeader(jpeg);
  ASSERT_TRUE(header.ok());
  const int64_t h = header->height, w = header->width;
  EXPECT_EQ(DecodeJpeg(jpeg, {.channels = 2}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeJpeg(jpeg, {.channels = 4}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeJpeg(jpeg, {.scale_denom = 3}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeJpeg(jpeg, {.scale_denom = 16}).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (const CropWindow& bad :
       {CropWindow{0, 0, 0, 10}, CropWindow{0, 0, 10, 0}, CropWindow{-1, 0, 10, 10},
        CropWindow{0, -1, 10, 10}, CropWindow{h - 9, 0, 10, 10}, CropWindow{0, w - 9, 10, 10},
        CropWindow{0, 0, h + 1, w}}) {
    auto image = DecodeJpeg(jpeg, {.crop = bad});
    EXPECT_EQ(image.status().code(), absl::StatusCode::kInvalidArgument) << bad.DebugString();
    EXPECT_THAT(image.status().message(), HasSubstr("crop window"));
  }
  // The window is in scaled coordinates: it must fit the scaled image.
  const int64_t sh = JpegScaledSize(h, 2), sw = JpegScaledSize(w, 2);
  EXPECT_TRUE(DecodeJpeg(jpeg, {.crop = CropWindow{0, 0, sh, sw}, .scale_denom = 2}).ok());
  EXPECT_EQ(
      DecodeJpeg(jpeg, {.crop = CropWindow{0, 0, sh + 1, 10}, .scale_denom = 2}).status().code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
