#include "ops/encode_jpeg.h"

#include <turbojpeg.h>

#include <string>

#include "gtest/gtest.h"
#include "ops/decode_jpeg.h"
#include "tests/ops/image_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::MakeImage;
using ::sluice::testing::MeanAbsDiff;
using ::sluice::testing::PhotoJpegs;

// The chroma subsampling TurboJPEG reads from a JPEG's header.
int Subsampling(const std::string& jpeg) {
  tjhandle tj = tjInitDecompress();
  int w = 0, h = 0, subsamp = -1, colorspace = 0;
  tjDecompressHeader3(tj, reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size(), &w, &h,
                      &subsamp, &colorspace);
  tjDestroy(tj);
  return subsamp;
}

TEST(EncodeJpegTest, PhotoRoundTripIsClose) {
  for (const std::string& original : PhotoJpegs()) {
    auto image = DecodeJpeg(original);
    ASSERT_TRUE(image.ok());
    for (ChromaSubsampling s : {ChromaSubsampling::k420, ChromaSubsampling::k444}) {
      auto jpeg = EncodeJpeg(*image, {.quality = 95, .subsampling = s});
      ASSERT_TRUE(jpeg.ok()) << jpeg.status();
      auto header = ReadJpegHeader(*jpeg);
      ASSERT_TRUE(header.ok());
      EXPECT_EQ(header->height, image->dim(0));
      EXPECT_EQ(header->width, image->dim(1));
      EXPECT_EQ(header->channels, 3);
      auto back = DecodeJpeg(*jpeg);
      ASSERT_TRUE(back.ok());
      ASSERT_EQ(back->shape(), image->shape());
      EXPECT_LT(MeanAbsDiff(*back, *image), 2.0);
    }
  }
}

TEST(EncodeJpegTest, SubsamplingOption) {
  auto image = DecodeJpeg(PhotoJpegs()[0]);
  ASSERT_TRUE(image.ok());
  auto s420 = EncodeJpeg(*image);
  auto s422 = EncodeJpeg(*image, {.subsampling = ChromaSubsampling::k422});
  auto s444 = EncodeJpeg(*image, {.subsampling = ChromaSubsampling::k444});
  ASSERT_TRUE(s420.ok() && s422.ok() && s444.ok());
  EXPECT_EQ(Subsampling(*s420), TJSAMP_420);  // The default.
  EXPECT_EQ(Subsampling(*s422), TJSAMP_422);
  EXPECT_EQ(Subsampling(*s444), TJSAMP_444);
  EXPECT_LT(s420->size(), s444->size());
}

TEST(EncodeJpegTest, QualityAndProgressive) {
  auto image = DecodeJpeg(PhotoJpegs()[1]);
  ASSERT_TRUE(image.ok());
  auto q95 = EncodeJpeg(*image);
  auto q50 = EncodeJpeg(*image, {.quality = 50});
  ASSERT_TRUE(q95.ok() && q50.ok());
  EXPECT_LT(q50->size(), q95->size());
  auto back50 = DecodeJpeg(*q50);
  auto back95 = DecodeJpeg(*q95);
  EXPECT_GT(MeanAbsDiff(*back50, *image), MeanAbsDiff(*back95, *image));
  auto progressive = EncodeJpeg(*image, {.progressive = true});
  ASSERT_TRUE(progressive.ok());
  EXPECT_NE(progressive->find("\xff\xc2"), std::string::npos);  // SOF2: progressive DCT.
  EXPECT_EQ(q95->find("\xff\xc2"), std::string::npos);
  auto back = DecodeJpeg(*progressive);
  ASSERT_TRUE(back.ok());
  EXPECT_LT(MeanAbsDiff(*back, *image), 2.0);
}

TEST(EncodeJpegTest, GrayscaleAndOddSizes) {
  const Tensor gray =
      MakeImage(17, 5, 1, [](int64_t y, int64_t x, int64_t) { return y * 15 + x * 3; });
  auto jpeg = EncodeJpeg(gray, {.quality = 100});
  ASSERT_TRUE(jpeg.ok());
  EXPECT_EQ(Subsampling(*jpeg), TJSAMP_GRAY);
  auto back = DecodeJpeg(*jpeg);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->shape(), (Shape{17, 5, 1}));
  EXPECT_LT(MeanAbsDiff(*back, gray), 1.0);
  const Tensor one = MakeImage(1, 1, 3, [](int64_t, int64_t, int64_t c) { return 60 * c; });
  auto tiny = EncodeJpeg(one);
  ASSERT_TRUE(tiny.ok());
  auto tiny_back = DecodeJpeg(*tiny);
  ASSERT_TRUE(tiny_back.ok());
  EXPECT_EQ(tiny_back->shape(), (Shape{1, 1, 3}));
}

TEST(EncodeJpegTest, BaselineAfterProgressiveIsRight) {
  // TurboJPEG 2.1 compressors that made a progressive JPEG write wrong pixels afterwards: each call
  // must use a fresh one.
  const Tensor gray =
      MakeImage(17, 5, 1, [](int64_t y, int64_t x, int64_t) { return y * 15 + x * 3; });
  const Tensor rgb =
      MakeImage(17, 5, 3, [](int64_t y, int64_t x, int64_t c) { return y * 15 + x * 3 + c; });
  for (const Tensor* first : {&gray, &rgb}) {
    ASSERT_TRUE(EncodeJpeg(*first, {.progressive = true}).ok());
    for (const Tensor* second : {&gray, &rgb}) {
      auto jpeg = EncodeJpeg(*second, {.quality = 100, .subsampling = ChromaSubsampling::k444});
      ASSERT_TRUE(jpeg.ok());
      auto back = DecodeJpeg(*jpeg);
      ASSERT_TRUE(back.ok());
      EXPECT_LT(MeanAbsDiff(*back, *second), 1.0);
    }
  }
}

TEST(EncodeJpegTest, Errors) {
  const Tensor rgba = MakeImage(4, 4, 4, [](int64_t, int64_t, int64_t) { return 0; });
  EXPECT_EQ(EncodeJpeg(rgba).status().code(), absl::StatusCode::kInvalidArgument);
  auto floats = Tensor::FromVector<float>(std::vector<float>(12, 0.0f), Shape{2, 2, 3});
  EXPECT_EQ(EncodeJpeg(*floats).status().code(), absl::StatusCode::kInvalidArgument);
  const Tensor rgb = MakeImage(4, 4, 3, [](int64_t, int64_t, int64_t) { return 0; });
  EXPECT_EQ(EncodeJpeg(rgb, {.quality = 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeJpeg(rgb, {.quality = 101}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeJpeg(Tensor(DType::kUint8, Shape{0, 4, 3})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeJpeg(Tensor(DType::kUint8, Shape{70000, 1, 1})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
