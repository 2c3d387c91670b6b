#include "ops/random_resized_crop.h"

#include <cmath>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/decode_jpeg.h"
#include "ops/encode_jpeg.h"
#include "ops/flip.h"
#include "ops/normalize.h"
#include "tests/ops/image_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::MaxAbsDiff;
using ::sluice::testing::MeanAbsDiff;
using ::sluice::testing::PhotoJpegs;

bool Inside(const CropWindow& w, int64_t h, int64_t wd) {
  return w.y >= 0 && w.x >= 0 && w.height >= 1 && w.width >= 1 && w.y + w.height <= h &&
         w.x + w.width <= wd;
}

TEST(SampleRandomResizedCropTest, WindowsInsideWithAreaAndRatioInBounds) {
  const RandomResizedCropOptions options;
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{375, 500},
                                                              {500, 375},
                                                              {1000, 1000},
                                                              {100, 1000},
                                                              {1000, 100},
                                                              {1, 1},
                                                              {7, 3},
                                                              {2, 900}}) {
    int fallbacks = 0;
    for (uint64_t seed = 0; seed < 5000; ++seed) {
      const CropWindow c = SampleRandomResizedCrop(h, w, seed, options);
      ASSERT_TRUE(Inside(c, h, w)) << h << "x" << w << " seed " << seed << " " << c.DebugString();
      // A sampled window has its sides rounded from exact values within the bounds; the
      // fallback is centred and spans the full height or width.
      const double area_lo = (c.height - 0.5) * (c.width - 0.5) / (double(h) * w);
      const double area_hi = (c.height + 0.5) * (c.width + 0.5) / (double(h) * w);
      const double ratio_lo = (c.width - 0.5) / (c.height + 0.5);
      const double ratio_hi = (c.width + 0.5) / (c.height - 0.5);
      const bool sampled = area_hi >= options.min_area && area_lo <= options.max_area &&
                           ratio_hi >= options.min_aspect_ratio &&
                           ratio_lo <= options.max_aspect_ratio;
      const bool fallback =
          (c.height == h || c.width == w) && c.y == (h - c.height) / 2 && c.x == (w - c.width) / 2;
      ASSERT_TRUE(sampled || fallback)
          << h << "x" << w << " seed " << seed << " " << c.DebugString();
      if (!sampled) ++fallbacks;
    }
    if (h == 1000 && w == 1000) {
      EXPECT_EQ(fallbacks, 0);  // Ten attempts practically always find a window in a square.
    }
  }
}

TEST(SampleRandomResizedCropTest, ReproduciblePerSeedAndVaried) {
  std::set<std::vector<int64_t>> distinct;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const CropWindow a = SampleRandomResizedCrop(375, 500, seed);
    const CropWindow b = SampleRandomResizedCrop(375, 500, seed);
    EXPECT_EQ(a, b);
    distinct.insert({a.y, a.x, a.height, a.width});
  }
  EXPECT_GT(distinct.size(), 190u);
}

TEST(SampleRandomResizedCropTest, FixedAreaAndRatioGiveHandComputedSizes) {
  // Area 1/4 of 400x400 at ratio 1: sqrt(40000) = 200 on each side.
  RandomResizedCropOptions square{
      .min_area = 0.25, .max_area = 0.25, .min_aspect_ratio = 1, .max_aspect_ratio = 1};
  // Area 0.18 of 300x600 = 32400 at ratio 2: w = round(sqrt(64800)) = round(254.56) = 255,
  // h = round(sqrt(16200)) = round(127.28) = 127.
  RandomResizedCropOptions wide{
      .min_area = 0.18, .max_area = 0.18, .min_aspect_ratio = 2, .max_aspect_ratio = 2};
  int64_t min_y = 1000, max_y = -1;
  double sum_x = 0;
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    const CropWindow s = SampleRandomResizedCrop(400, 400, seed, square);
    ASSERT_EQ(s.height, 200);
    ASSERT_EQ(s.width, 200);
    min_y = std::min(min_y, s.y);
    max_y = std::max(max_y, s.y);
    sum_x += s.x;
    const CropWindow w = SampleRandomResizedCrop(300, 600, seed, wide);
    ASSERT_EQ(w.height, 127);
    ASSERT_EQ(w.width, 255);
    ASSERT_TRUE(Inside(w, 300, 600));
  }
  // Positions are uniform over [0, 400 - 200] inclusive.
  EXPECT_EQ(min_y, 0);
  EXPECT_EQ(max_y, 200);
  EXPECT_NEAR(sum_x / 3000, 100, 5);
}

TEST(SampleRandomResizedCropTest, FallbackIsCentreCropWithClampedRatio) {
  const RandomResizedCropOptions none{.max_attempts = 0};
  // 100 high, 1000 wide: ratio 10 > 4/3, so h = 100 and w = round(133.33) = 133.
  EXPECT_EQ(SampleRandomResizedCrop(100, 1000, 1, none), (CropWindow{0, 433, 100, 133}));
  // 1000 high, 100 wide: ratio 0.1 < 3/4, so w = 100 and h = round(133.33) = 133.
  EXPECT_EQ(SampleRandomResizedCrop(1000, 100, 1, none), (CropWindow{433, 0, 133, 100}));
  // A ratio in range: the whole image.
  EXPECT_EQ(SampleRandomResizedCrop(375, 500, 1, none), (CropWindow{0, 0, 375, 500}));
  // An area that never fits (min_area > 1 is refused by the ops; here max ratio makes w > W).
  const RandomResizedCropOptions impossible{
      .min_area = 1, .max_area = 1, .min_aspect_ratio = 4, .max_aspect_ratio = 4};
  EXPECT_EQ(SampleRandomResizedCrop(300, 300, 7, impossible), (CropWindow{112, 0, 75, 300}));
}

TEST(DecodeAndRandomResizedCropTest, OutputSizeAndReproducible) {
  for (const std::string& jpeg : PhotoJpegs()) {
    for (uint64_t seed : {0ull, 1ull, 42ull, 123456789ull}) {
      auto a = DecodeAndRandomResizedCrop(jpeg, 224, 224, seed);
      ASSERT_TRUE(a.ok()) << a.status();
      EXPECT_EQ(a->shape(), (Shape{224, 224, 3}));
      auto b = DecodeAndRandomResizedCrop(jpeg, 224, 224, seed);
      ASSERT_TRUE(b.ok());
      EXPECT_TRUE(a->Equals(*b));
      auto other = DecodeAndRandomResizedCrop(jpeg, 224, 224, seed + 1000);
      ASSERT_TRUE(other.ok());
      EXPECT_FALSE(a->Equals(*other));
    }
    auto rect = DecodeAndRandomResizedCrop(jpeg, 160, 96, 5);
    ASSERT_TRUE(rect.ok());
    EXPECT_EQ(rect->shape(), (Shape{160, 96, 3}));
  }
}

// What train/recipes/imagenet_pipeline does in one call: bitwise the three ops it replaces.
TEST(DecodeAndRandomResizedCropTest, FusedFlipAndNormalizeEqualSeparateOps) {
  auto table = NormalizeTable::Create(3, kImageNetMean, kImageNetStd);
  ASSERT_TRUE(table.ok());
  int flipped = 0;
  for (const std::string& jpeg : PhotoJpegs()) {
    for (uint64_t seed = 0; seed < 12; ++seed) {
      auto crop = DecodeAndRandomResizedCrop(jpeg, 224, 224, seed);
      ASSERT_TRUE(crop.ok()) << crop.status();
      auto flip = RandomFlipLeftRight(*crop, seed);
      ASSERT_TRUE(flip.ok());
      auto ref = Normalize(*flip, kImageNetMean, kImageNetStd);
      ASSERT_TRUE(ref.ok());
      const bool do_flip = RandomFlipDecision(seed);
      flipped += do_flip;
      auto fused = DecodeAndRandomResizedCrop(jpeg, 224, 224, seed, {},
                                              {.flip_left_right = do_flip, .normalize = &*table});
      ASSERT_TRUE(fused.ok()) << fused.status();
      EXPECT_TRUE(fused->Equals(*ref)) << "seed " << seed;
    }
  }
  EXPECT_GT(flipped, 0);  // Both branches ran.
  EXPECT_LT(flipped, 36);
}

TEST(DecodeAndRandomResizedCropTest, WithoutDctScalingEqualsDecodeThenRandomResizedCrop) {
  const RandomResizedCropOptions options{.dct_scaling = false};
  for (const std::string& jpeg : PhotoJpegs()) {
    auto full = DecodeJpeg(jpeg);
    ASSERT_TRUE(full.ok());
    for (uint64_t seed = 0; seed < 40; ++seed) {
      for (auto [oh, ow] : std::vector<std::pair<int64_t, int64_t>>{{224, 224}, {64, 48}}) {
        auto got = DecodeAndRandomResizedCrop(jpeg, oh, ow, seed, options);
        auto want = RandomResizedCrop(*full, oh, ow, seed, options);
        ASSERT_TRUE(got.ok() && want.ok());
        ASSERT_LE(MaxAbsDiff(*got, *want), 1) << "seed " << seed;
      }
    }
  }
}

// The full decode box-averaged over d x d blocks (scaled pixel i covers original pixels
// [i * d, (i + 1) * d), cut at the image edge), as float: what DCT scaling approximates.
Tensor BoxDownscale(const Tensor& full, int d) {
  const int64_t h = full.dim(0), w = full.dim(1), c = full.dim(2);
  const int64_t sh = (h + d - 1) / d, sw = (w + d - 1) / d;
  Tensor out(DType::kFloat32, Shape{sh, sw, c});
  for (int64_t y = 0; y < sh; ++y) {
    for (int64_t x = 0; x < sw; ++x) {
      for (int64_t k = 0; k < c; ++k) {
        double sum = 0;
        int n = 0;
        for (int64_t yy = y * d; yy < std::min(h, (y + 1) * d); ++yy) {
          for (int64_t xx = x * d; xx < std::min(w, (x + 1) * d); ++xx, ++n) {
            sum += testing::At(full, yy, xx, k);
          }
        }
        out.data<float>()[(y * sw + x) * c + k] = static_cast<float>(sum / n);
      }
    }
  }
  return out;
}

double MeanAbsDiffToFloat(const Tensor& u8, const Tensor& f) {
  double total = 0;
  for (int64_t i = 0; i < u8.num_elements(); ++i) {
    total += std::abs(u8.data<uint8_t>()[i] - f.data<float>()[i]);
  }
  return total / static_cast<double>(u8.num_elements());
}

TEST(DecodeAndRandomResizedCropTest, DctScalingKeepsTheWindowGeometry) {
  // Small outputs make windows large relative to them, so DCT scales of 1/2 to 1/8 are used. The
  // reference box-averages the full decode at the chosen scale and resizes the window divided by
  // the scale: a scaled decode with the window misplaced by half a scaled pixel, or cropped at the
  // wrong scale, would differ by several levels (measured: 2 to 9) instead of below one.
  int scaled_windows = 0;
  for (const std::string& jpeg : PhotoJpegs()) {
    auto full = DecodeJpeg(jpeg);
    ASSERT_TRUE(full.ok());
    for (ResizeMethod method : {ResizeMethod::kBilinear, ResizeMethod::kArea}) {
      for (uint64_t seed = 0; seed < 15; ++seed) {
        auto got = DecodeAndRandomResizedCrop(jpeg, 40, 40, seed, {.method = method});
        ASSERT_TRUE(got.ok());
        const CropWindow w = SampleRandomResizedCrop(full->dim(0), full->dim(1), seed);
        const int d = ChooseScaleDenom(w.height, w.width, 40, 40);
        scaled_windows += d > 1;
        const Tensor box = BoxDownscale(*full, d);
        auto region = [&](double shift) {
          return ResizeRegion{w.y / double(d) + shift, w.x / double(d) + shift,
                              w.height / double(d) - shift, w.width / double(d) - shift};
        };
        auto want = Resize(box, region(0), 40, 40, method);
        auto shifted = Resize(box, region(0.5), 40, 40, method);
        ASSERT_TRUE(want.ok() && shifted.ok());
        const double error = MeanAbsDiffToFloat(*got, *want);
        EXPECT_LT(error, 1.0) << "seed " << seed << " 1/" << d;
        if (d > 1) {
          EXPECT_LT(2 * error, MeanAbsDiffToFloat(*got, *shifted)) << "seed " << seed;
        }
      }
    }
  }
  EXPECT_GT(scaled_windows, 60);
}

TEST(DecodeAndRandomResizedCropTest, Channels) {
  auto gray_photo = DecodeJpeg(PhotoJpegs()[0], {.channels = 1});
  ASSERT_TRUE(gray_photo.ok());
  auto gray_jpeg = EncodeJpeg(*gray_photo);
  ASSERT_TRUE(gray_jpeg.ok());
  auto rgb = DecodeAndRandomResizedCrop(*gray_jpeg, 32, 32, 1);  // channels = 3 by default.
  ASSERT_TRUE(rgb.ok());
  EXPECT_EQ(rgb->dim(2), 3);
  auto as_encoded = DecodeAndRandomResizedCrop(*gray_jpeg, 32, 32, 1, {.channels = 0});
  ASSERT_TRUE(as_encoded.ok());
  EXPECT_EQ(as_encoded->dim(2), 1);
  auto gray = DecodeAndRandomResizedCrop(PhotoJpegs()[0], 32, 32, 1, {.channels = 1});
  ASSERT_TRUE(gray.ok());
  EXPECT_EQ(gray->dim(2), 1);
}

TEST(DecodeAndRandomResizedCropTest, Errors) {
  const std::string& jpeg = PhotoJpegs()[0];
  EXPECT_EQ(DecodeAndRandomResizedCrop("garbage", 224, 224, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      DecodeAndRandomResizedCrop(jpeg.substr(0, jpeg.size() / 2), 224, 224, 1).status().code(),
      absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeAndRandomResizedCrop(jpeg, 0, 224, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (const RandomResizedCropOptions& bad :
       {RandomResizedCropOptions{.min_area = 0},
        RandomResizedCropOptions{.min_area = 0.5, .max_area = 0.4},
        RandomResizedCropOptions{.max_area = 1.5}, RandomResizedCropOptions{.min_aspect_ratio = 2},
        RandomResizedCropOptions{.max_attempts = -1}, RandomResizedCropOptions{.channels = 2}}) {
    EXPECT_EQ(DecodeAndRandomResizedCrop(jpeg, 224, 224, 1, bad).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(DecodeAndRandomResizedCrop(jpeg, 224, 224, 1, {.max_pixels = 1000}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
