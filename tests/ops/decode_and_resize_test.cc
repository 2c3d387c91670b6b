#include "ops/decode_and_resize.h"

#include "gtest/gtest.h"
#include "ops/crop.h"
#include "ops/decode_jpeg.h"
#include "ops/resize.h"
#include "tests/ops/image_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::MaxAbsDiff;
using ::sluice::testing::MeanAbsDiff;
using ::sluice::testing::PhotoJpegs;
using ::sluice::testing::ResizeRounded;

TEST(CropToAspectRatioTest, KerasArithmeticHandChecked) {
  // 375x500 to 64x96: height int(500 * 64 / 96) = 333, width int(375 * 96 / 64) = 562 -> 500,
  // y = int((375 - 333) / 2) = 21.
  EXPECT_EQ(CropToAspectRatio(375, 500, 64, 96), (CropWindow{21, 0, 333, 500}));
  // 500x375 to a square: 375x375, y = int(125 / 2) = 62.
  EXPECT_EQ(CropToAspectRatio(500, 375, 100, 100), (CropWindow{62, 0, 375, 375}));
  // Same aspect ratio: the whole image.
  EXPECT_EQ(CropToAspectRatio(300, 400, 3, 4), (CropWindow{0, 0, 300, 400}));
  // Extreme: a 1-pixel-high output from a tall image keeps at least one row.
  EXPECT_EQ(CropToAspectRatio(10, 1, 1, 1000), (CropWindow{4, 0, 1, 1}));
}

TEST(DecodeAndResizeTest, WithoutDctScalingEqualsDecodeCropResize) {
  for (const std::string& jpeg : PhotoJpegs()) {
    auto full = DecodeJpeg(jpeg, {.channels = 3});
    ASSERT_TRUE(full.ok()) << full.status();
    for (bool crop : {false, true}) {
      auto got =
          DecodeAndResize(jpeg, 48, 80, {.crop_to_aspect_ratio = crop, .dct_scaling = false});
      ASSERT_TRUE(got.ok()) << got.status();
      const CropWindow window = crop ? CropToAspectRatio(full->dim(0), full->dim(1), 48, 80)
                                     : CropWindow{0, 0, full->dim(0), full->dim(1)};
      auto cropped = Crop(*full, window);
      ASSERT_TRUE(cropped.ok());
      auto expected = ResizeRounded(*cropped, 48, 80);
      ASSERT_TRUE(expected.ok());
      EXPECT_EQ(MaxAbsDiff(*got, *expected), 0) << "crop " << crop;
    }
  }
}

TEST(DecodeAndResizeTest, DctScalingIsCloserToTheAreaAverageThanPlainBilinear) {
  for (const std::string& jpeg : PhotoJpegs()) {
    auto scaled = DecodeAndResize(jpeg, 48, 80);  // 1/4 scale for a 500x375 photo
    auto plain = DecodeAndResize(jpeg, 48, 80, {.dct_scaling = false});
    auto full = DecodeJpeg(jpeg, {.channels = 3});
    ASSERT_TRUE(scaled.ok() && plain.ok() && full.ok());
    ASSERT_EQ(scaled->shape(), (Shape{48, 80, 3}));
    // The box filter's average of each output pixel's area is the alias-free reference. Bilinear
    // shrinking by 5x without antialiasing samples a few pixels of each area; decoding at 1/4
    // scale first averages them in the DCT domain, so it lands much nearer the reference.
    auto area = ResizeRounded(*full, 48, 80, ResizeMethod::kArea);
    ASSERT_TRUE(area.ok());
    const double scaled_error = MeanAbsDiff(*scaled, *area);
    const double plain_error = MeanAbsDiff(*plain, *area);
    EXPECT_LT(scaled_error, 0.5 * plain_error) << scaled_error << " vs " << plain_error;
  }
}

TEST(DecodeAndResizeTest, WindowAndOutputFusion) {
  const std::string& jpeg = PhotoJpegs()[0];
  auto full = DecodeJpeg(jpeg, {.channels = 1});
  ASSERT_TRUE(full.ok());
  const CropWindow window{17, 33, 101, 203};
  auto got = DecodeWindowAndResize(jpeg, window, 20, 40, {.channels = 1, .dct_scaling = false});
  ASSERT_TRUE(got.ok()) << got.status();
  auto expected = ResizeRounded(*Crop(*full, window), 20, 40);
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(MaxAbsDiff(*got, *expected), 0);
  const NormalizeTable as_float = NormalizeTable::Rescaling(1);
  auto floats = DecodeWindowAndResize(jpeg, window, 20, 40, {.channels = 1, .dct_scaling = false},
                                      {.normalize = &as_float});
  ASSERT_TRUE(floats.ok()) << floats.status();
  ASSERT_EQ(floats->dtype(), DType::kFloat32);
  for (int64_t i = 0; i < floats->num_elements(); ++i) {
    ASSERT_EQ(floats->data<float>()[i], static_cast<float>(expected->data<uint8_t>()[i]));
  }
}

TEST(DecodeAndResizeTest, Errors) {
  const std::string& jpeg = PhotoJpegs()[0];
  EXPECT_EQ(DecodeAndResize("not a jpeg", 8, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeAndResize(jpeg, 0, 8).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeWindowAndResize(jpeg, {0, 0, 0, 5}, 8, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(DecodeWindowAndResize(jpeg, {0, 0, 10000, 10}, 8, 8).ok());
}

}  // namespace
}  // namespace sluice
