#include "ops/jpeg_restart.h"

#include <turbojpeg.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/crop.h"
#include "ops/decode_jpeg.h"
#include "ops/encode_jpeg.h"
#include "tests/libjpeg_encode.h"
#include "tests/ops/image_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::MakeImage;
using ::sluice::testing::PhotoJpegs;
using ::sluice::testing::TurboDecode;

// The restart interval a JPEG's DRI marker declares, or 0 without one (walks the markers by hand,
// independently of the code under test).
int DeclaredRestartInterval(const std::string& jpeg) {
  size_t p = 2;
  while (p + 4 <= jpeg.size() && static_cast<uint8_t>(jpeg[p]) == 0xFF) {
    const uint8_t marker = static_cast<uint8_t>(jpeg[p + 1]);
    const size_t length =
        (static_cast<uint8_t>(jpeg[p + 2]) << 8) | static_cast<uint8_t>(jpeg[p + 3]);
    if (marker == 0xDD) {
      return (static_cast<uint8_t>(jpeg[p + 4]) << 8) | static_cast<uint8_t>(jpeg[p + 5]);
    }
    if (marker == 0xDA) return 0;
    p += 2 + length;
  }
  return 0;
}

// Photos and synthetic JPEGs of every sampling our decoder meets, sizes not multiples of the MCU.
std::vector<std::string> TestJpegs() {
  std::vector<std::string> out = PhotoJpegs();
  const Tensor rgb = MakeImage(141, 203, 3, [](int64_t y, int64_t x, int64_t c) {
    return (y * 7 + x * 3 + c * 50 + (x * y) % 23) % 256;
  });
  const Tensor gray = MakeImage(77, 130, 1, [](int64_t y, int64_t x, int64_t) {
    return (y * 5 + x * 11 + (x * y) % 7) % 256;
  });
  for (ChromaSubsampling s :
       {ChromaSubsampling::k420, ChromaSubsampling::k422, ChromaSubsampling::k444}) {
    out.push_back(*EncodeJpeg(rgb, {.quality = 85, .subsampling = s}));
  }
  out.push_back(*EncodeJpeg(rgb, {.quality = 90, .progressive = true}));
  out.push_back(*EncodeJpeg(gray, {.quality = 90}));
  return out;
}

Tensor CropOf(const Tensor& image, const CropWindow& w) {
  auto cropped = Crop(image, w);
  EXPECT_TRUE(cropped.ok()) << cropped.status();
  return *cropped;
}

TEST(JpegRestartTest, ReencodingIsLosslessAndDeclaresTheInterval) {
  for (const std::string& jpeg : TestJpegs()) {
    EXPECT_EQ(DeclaredRestartInterval(jpeg), 0);
    const Tensor want = TurboDecode(jpeg, TJPF_RGB);
    for (int interval : {1, 2, 5}) {
      auto with = AddJpegRestartMarkers(jpeg, interval);
      ASSERT_TRUE(with.ok()) << with.status();
      EXPECT_EQ(DeclaredRestartInterval(*with), interval);
      // The reference decoder, not ours: the same pixels, bit for bit.
      EXPECT_TRUE(TurboDecode(*with, TJPF_RGB).Equals(want)) << interval;
    }
  }
}

TEST(JpegRestartTest, CropDecodesEqualTheWholeImageCropped) {
  std::mt19937 rng(5);
  int regions = 0;
  for (const std::string& original : TestJpegs()) {
    // 1, 2 and 4 divide a row of MCUs of the 500-px photos (32 MCUs); 64 is two whole rows; 3 is
    // neither (no region: the ordinary crop decode).
    for (int interval : {1, 2, 4, 64, 3}) {
      const std::string jpeg = *AddJpegRestartMarkers(original, interval);
      for (int channels : {3, 1}) {
        for (int denom : {1, 2, 4, 8}) {
          auto full = DecodeJpeg(jpeg, {.channels = channels, .scale_denom = denom});
          ASSERT_TRUE(full.ok()) << full.status();
          const int64_t h = full->dim(0), w = full->dim(1);
          for (int trial = 0; trial < 12; ++trial) {
            const int64_t wh = 1 + static_cast<int64_t>(rng() % h);
            const int64_t ww = 1 + static_cast<int64_t>(rng() % w);
            const CropWindow window{.y = static_cast<int64_t>(rng() % (h - wh + 1)),
                                    .x = static_cast<int64_t>(rng() % (w - ww + 1)),
                                    .height = wh,
                                    .width = ww};
            regions += ExtractJpegRegion(jpeg, window, denom, 4).has_value();
            const DecodeJpegOptions options{
                .channels = channels, .crop = window, .scale_denom = denom};
            auto got = DecodeJpeg(jpeg, options);
            ASSERT_TRUE(got.ok()) << got.status();
            ASSERT_TRUE(got->Equals(CropOf(*full, window)))
                << "interval " << interval << ", channels " << channels << ", 1/" << denom
                << ", window " << window.DebugString();
            int64_t at = -1;
            auto covering = DecodeJpegCovering(jpeg, options, &at);
            ASSERT_TRUE(covering.ok()) << covering.status();
            ASSERT_TRUE(CropOf(*covering, {0, at, wh, ww}).Equals(CropOf(*full, window)))
                << window.DebugString();
          }
        }
      }
    }
  }
  EXPECT_GT(regions, 500);  // The region path was taken, not only the ordinary decode.
}

TEST(JpegRestartTest, RegionIsASmallerJpegOfTheSegmentsAroundTheWindow) {
  const std::string jpeg = *AddJpegRestartMarkers(PhotoJpegs()[0], 2);  // 500x375, 4:2:0
  auto region = ExtractJpegRegion(jpeg, {.y = 100, .x = 200, .height = 50, .width = 60}, 1, 4);
  ASSERT_TRUE(region.has_value());
  EXPECT_EQ(region->full_height, 375);
  EXPECT_EQ(region->full_width, 500);
  // MCUs are 16x16 and segments 32 px wide: rows 96..159 (with the 4-px margin), columns
  // 192..287.
  EXPECT_EQ(region->y, 96);
  EXPECT_EQ(region->x, 192);
  auto header = ReadJpegHeader(region->jpeg);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->height, 64);
  EXPECT_EQ(header->width, 96);
  // The JPEG proper (to its EOI; zero bytes follow for libjpeg-turbo's fast Huffman path) is
  // under a tenth of the whole.
  const size_t eoi = region->jpeg.rfind("\xFF\xD9");
  ASSERT_NE(eoi, std::string::npos);
  EXPECT_LT((eoi + 2) * 10, jpeg.size());
  EXPECT_EQ(region->jpeg.find_first_not_of('\0', eoi + 2), std::string::npos);
  const Tensor full = *DecodeJpeg(jpeg);
  EXPECT_TRUE(
      CropOf(*DecodeJpeg(region->jpeg), {4, 8, 50, 60}).Equals(CropOf(full, {100, 200, 50, 60})));
}

TEST(JpegRestartTest, NoRegionWhereNothingIsSaved) {
  const std::string& plain = PhotoJpegs()[0];
  const CropWindow small{.y = 10, .x = 10, .height = 20, .width = 20};
  EXPECT_FALSE(ExtractJpegRegion(plain, small, 1, 4).has_value());  // No restart markers.
  const std::string jpeg = *AddJpegRestartMarkers(plain, 2);
  EXPECT_TRUE(ExtractJpegRegion(jpeg, small, 1, 4).has_value());
  EXPECT_FALSE(ExtractJpegRegion(jpeg, {0, 0, 375, 500}, 1, 4).has_value());  // The whole image.
  EXPECT_FALSE(ExtractJpegRegion(jpeg, {0, 0, 376, 500}, 1, 4).has_value());  // Outside it.
  EXPECT_FALSE(ExtractJpegRegion(jpeg.substr(0, 600), small, 1, 4).has_value());
  // Progressive data has no segments to copy.
  const std::string progressive = *EncodeJpeg(*DecodeJpeg(plain), {.progressive = true});
  EXPECT_FALSE(ExtractJpegRegion(progressive, small, 1, 4).has_value());
}

// Finds the n-th restart marker (FF D0..D7) after the SOS.
size_t NthRestartMarker(const std::string& jpeg, int n) {
  size_t p = jpeg.find("\xFF\xDA");
  for (; p + 1 < jpeg.size(); ++p) {
    const uint8_t next = static_cast<uint8_t>(jpeg[p + 1]);
    if (static_cast<uint8_t>(jpeg[p]) == 0xFF && next >= 0xD0 && next <= 0xD7 && n-- == 0) {
      return p;
    }
  }
  return std::string::npos;
}

TEST(JpegRestartTest, DamagedOrTruncatedDataDecodesAsWithoutRegions) {
  const std::string jpeg = *AddJpegRestartMarkers(PhotoJpegs()[0], 2);
  const CropWindow window{.y = 200, .x = 300, .height = 100, .width = 100};
  // A restart marker out of sequence: libjpeg resynchronises with warnings; the region path steps
  // aside and the result is libjpeg's own.
  std::string damaged = jpeg;
  const size_t marker = NthRestartMarker(damaged, 40);
  ASSERT_NE(marker, std::string::npos);
  damaged[marker + 1] = static_cast<char>(0xD0 + (damaged[marker + 1] - 0xD0 + 3) % 8);
  EXPECT_FALSE(ExtractJpegRegion(damaged, window, 1, 4).has_value());
  auto got = DecodeJpeg(damaged, {.crop = window});
  auto want = DecodeJpeg(damaged, {.crop = window, .use_restart_markers = false});
  ASSERT_TRUE(got.ok() && want.ok()) << got.status() << want.status();
  EXPECT_TRUE(got->Equals(*want));
  // Cut short inside the window's rows: the error names the caller's buffer, not the region's.
  const std::string cut = jpeg.substr(0, NthRestartMarker(jpeg, 16 * 15));
  auto truncated = DecodeJpeg(cut, {.crop = window});
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(truncated.status().message(),
              ::testing::HasSubstr(absl::StrCat("the ", cut.size(), "-byte buffer")));
  // A window above the cut still decodes, from its own segments.
  auto above = DecodeJpeg(cut, {.crop = CropWindow{.y = 20, .x = 20, .height = 50, .width = 50}});
  ASSERT_TRUE(above.ok()) << above.status();
  EXPECT_TRUE(above->Equals(CropOf(*DecodeJpeg(jpeg), {20, 20, 50, 50})));
}

// An Adobe CMYK JPEG with restart markers, written with libjpeg itself (AddJpegRestartMarkers keeps
// CMYK as it is, but such files exist): the region keeps the Adobe marker, so the colours match.
std::string CmykJpegWithRestarts(int h, int w) {
  return testing::EncodeWithLibjpeg(
      {.width = w,
       .height = h,
       .components = 4,
       .in_space = JCS_CMYK,
       .jpeg_space = JCS_YCCK,
       .quality = 90,
       .restart_interval = 1},
      [](int x, int y, int ch) { return (x * 37 + y * 11 + ch * 60) % 256; });
}

TEST(JpegRestartTest, CmykWithRestartMarkersCropsAsTheWholeImage) {
  const std::string jpeg = CmykJpegWithRestarts(60, 90);
  EXPECT_EQ(DeclaredRestartInterval(jpeg), 1);
  auto full = DecodeJpeg(jpeg);
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_EQ(full->shape(), (Shape{60, 90, 3}));
  for (const CropWindow& window : {CropWindow{20, 30, 15, 25}, CropWindow{0, 50, 60, 40}}) {
    ASSERT_TRUE(ExtractJpegRegion(jpeg, window, 1, 4).has_value()) << window.DebugString();
    auto got = DecodeJpeg(jpeg, {.crop = window});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(got->Equals(CropOf(*full, window))) << window.DebugString();
  }
}

TEST(JpegRestartTest, ReencodingErrors) {
  EXPECT_EQ(AddJpegRestartMarkers("not a jpeg", 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AddJpegRestartMarkers(PhotoJpegs()[0], 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::string& photo = PhotoJpegs()[0];
  auto truncated = AddJpegRestartMarkers(photo.substr(0, photo.size() / 2), 1);
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kDataLoss) << truncated.status();
  EXPECT_THAT(truncated.status().message(), ::testing::HasSubstr("reading the coefficients"));
  // CMYK (TurboJPEG writes it as Adobe YCCK) is kept as it is.
  const int h = 16, w = 16;
  std::vector<uint8_t> cmyk(h * w * 4, 100);
  tjhandle tj = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(tjCompress2(tj, cmyk.data(), w, 0, h, TJPF_CMYK, &buf, &size, TJSAMP_444, 95, 0), 0);
  tjDestroy(tj);
  const std::string ycck(reinterpret_cast<char*>(buf), size);
  tjFree(buf);
  EXPECT_EQ(AddJpegRestartMarkers(ycck, 1).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace sluice
