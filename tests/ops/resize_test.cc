#include "ops/resize.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/crop.h"
#include "ops/flip.h"
#include "ops/normalize.h"
#include "tests/ops/image_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::At;
using ::sluice::testing::MakeImage;
using ::sluice::testing::MaxAbsDiff;
using ::sluice::testing::ResizeRounded;

Tensor FloatImage(int64_t h, int64_t w, int64_t c, const std::vector<float>& values) {
  auto t = Tensor::FromVector(values, Shape{h, w, c});
  EXPECT_TRUE(t.ok());
  return *t;
}

float FAt(const Tensor& t, int64_t y, int64_t x, int64_t c) {
  return t.data<float>()[(y * t.dim(1) + x) * t.dim(2) + c];
}

TEST(ResizeTest, ConstantImageStaysConstant) {
  for (ResizeMethod method : {ResizeMethod::kBilinear, ResizeMethod::kArea}) {
    for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 9}, {9, 1}, {37, 53}}) {
      for (auto [oh, ow] : std::vector<std::pair<int64_t, int64_t>>{
               {1, 1}, {5, 3}, {37, 53}, {224, 224}, {80, 7}}) {
        const Tensor u8 =
            MakeImage(h, w, 3, [](int64_t, int64_t, int64_t c) { return 17 + 100 * c; });
        auto out = ResizeRounded(u8, oh, ow, method);
        ASSERT_TRUE(out.ok()) << out.status();
        ASSERT_EQ(out->shape(), (Shape{oh, ow, 3}));
        for (int64_t y = 0; y < oh; ++y) {
          for (int64_t x = 0; x < ow; ++x) {
            for (int c = 0; c < 3; ++c) ASSERT_EQ(At(*out, y, x, c), 17 + 100 * c);
          }
        }
        auto f = Resize(FloatImage(h, w, 1, std::vector<float>(h * w, 0.3f)), oh, ow, method);
        ASSERT_TRUE(f.ok());
        for (float v : f->flat<float>()) ASSERT_NEAR(v, 0.3f, 1e-6f);
      }
    }
  }
}

TEST(ResizeTest, Bilinear2x2To4x4HandComputed) {
  // Half-pixel centres: output columns sample input x = -0.25 (clamped to 0), 0.25, 0.75, 1.25
  // (clamped to 1), i.e. weights of the right pixel 0, 1/4, 3/4, 1; the same for rows.
  const Tensor in = FloatImage(2, 2, 1, {0, 40, 80, 202});
  auto out = Resize(in, 4, 4);
  ASSERT_TRUE(out.ok());
  const float want[4][4] = {{0, 10, 30, 40},
                            {20, 35.125f, 65.375f, 80.5f},
                            {60, 85.375f, 136.125f, 161.5f},
                            {80, 110.5f, 171.5f, 202}};
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(FAt(*out, y, x, 0), want[y][x]) << y << "," << x;
  }
  // uint8 in: float32 out with the same values, as tf.image.resize gives.
  const Tensor in8 = MakeImage(2, 2, 1, [](int64_t y, int64_t x, int64_t) {
    return std::vector<int>{0, 40, 80, 202}[y * 2 + x];
  });
  auto as_tf = Resize(in8, 4, 4);
  ASSERT_TRUE(as_tf.ok());
  ASSERT_EQ(as_tf->dtype(), DType::kFloat32);
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(FAt(*as_tf, y, x, 0), want[y][x]) << y << "," << x;
  }
  // Rounded to uint8 (ResizeOutput's default): to nearest, halves up.
  auto out8 = ResizeRounded(in8, 4, 4);
  ASSERT_TRUE(out8.ok());
  ASSERT_EQ(out8->dtype(), DType::kUint8);
  const int want8[4][4] = {
      {0, 10, 30, 40}, {20, 35, 65, 81}, {60, 85, 136, 162}, {80, 111, 172, 202}};
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 4; ++x) EXPECT_EQ(At(*out8, y, x, 0), want8[y][x]) << y << "," << x;
  }
}

TEST(ResizeTest, SameSizeIsIdentity) {
  const Tensor in = MakeImage(
      13, 29, 3, [](int64_t y, int64_t x, int64_t c) { return (y * 31 + x * 7 + c * 50) % 256; });
  for (ResizeMethod method : {ResizeMethod::kBilinear, ResizeMethod::kArea}) {
    auto out = ResizeRounded(in, 13, 29, method);
    ASSERT_TRUE(out.ok());
    EXPECT_TRUE(out->Equals(in));
  }
}

TEST(ResizeTest, AreaDownscaleByTwoIsTwoByTwoMeans) {
  std::mt19937 rng(3);
  const Tensor in = MakeImage(10, 14, 3, [&](int64_t, int64_t, int64_t) { return rng() % 256; });
  auto out = ResizeRounded(in, 5, 7, ResizeMethod::kArea);
  ASSERT_TRUE(out.ok());
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 7; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int sum = At(in, 2 * y, 2 * x, c) + At(in, 2 * y, 2 * x + 1, c) +
                        At(in, 2 * y + 1, 2 * x, c) + At(in, 2 * y + 1, 2 * x + 1, c);
        ASSERT_EQ(At(*out, y, x, c), (sum + 2) / 4) << y << "," << x << "," << c;  // Halves up.
      }
    }
  }
}

TEST(ResizeTest, AreaNonIntegerFactorWeighsPartialPixels) {
  // 3 -> 2: output 0 covers [0, 1.5) = p0 + p1 / 2, output 1 covers [1.5, 3) = p1 / 2 + p2.
  const Tensor in = FloatImage(1, 3, 1, {3, 6, 12});
  auto out = Resize(in, 1, 2, ResizeMethod::kArea);
  ASSERT_TRUE(out.ok());
  EXPECT_FLOAT_EQ(FAt(*out, 0, 0, 0), (3 + 3) / 1.5f);
  EXPECT_FLOAT_EQ(FAt(*out, 0, 1, 0), (3 + 12) / 1.5f);
}

// The tf.image.resize(bilinear, half_pixel_centers) formula, per output pixel, in double.
double ReferenceBilinear(const Tensor& in, double sy, double sx, int64_t c) {
  const int64_t h = in.dim(0), w = in.dim(1);
  auto sample = [&](double s, int64_t n, int64_t* lo, int64_t* hi, double* lerp) {
    *lo = std::max<int64_t>(static_cast<int64_t>(std::floor(s)), 0);
    *hi = std::min<int64_t>(static_cast<int64_t>(std::ceil(s)), n - 1);
    *lerp = s - std::floor(s);
  };
  int64_t y0, y1, x0, x1;
  double ly, lx;
  sample(sy, h, &y0, &y1, &ly);
  sample(sx, w, &x0, &x1, &lx);
  y0 = std::min(y0, h - 1);
  x0 = std::min(x0, w - 1);
  const double top = At(in, y0, x0, c) + (At(in, y0, x1, c) - At(in, y0, x0, c)) * lx;
  const double bottom = At(in, y1, x0, c) + (At(in, y1, x1, c) - At(in, y1, x0, c)) * lx;
  return top + (bottom - top) * ly;
}

TEST(ResizeTest, BilinearMatchesTensorFlowFormula) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 30; ++trial) {
    const int64_t h = 1 + rng() % 60, w = 1 + rng() % 60, oh = 1 + rng() % 90, ow = 1 + rng() % 90;
    const int64_t c = trial % 3 == 0 ? 1 : (trial % 3 == 1 ? 3 : 2);
    const Tensor in = MakeImage(h, w, c, [&](int64_t, int64_t, int64_t) { return rng() % 256; });
    auto out = Resize(in, oh, ow);  // float32, unrounded, as tf.image.resize
    auto rounded = ResizeRounded(in, oh, ow);
    ASSERT_TRUE(out.ok() && rounded.ok());
    ASSERT_EQ(out->dtype(), DType::kFloat32);
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t x = 0; x < ow; ++x) {
        for (int64_t k = 0; k < c; ++k) {
          const double sy = (y + 0.5) * h / oh - 0.5, sx = (x + 0.5) * w / ow - 0.5;
          const double want = ReferenceBilinear(in, sy, sx, k);
          // Float arithmetic; rounded to uint8, within half a level more.
          ASSERT_LE(std::abs(FAt(*out, y, x, k) - want), 1e-3)
              << h << "x" << w << " -> " << oh << "x" << ow << " at " << y << "," << x;
          ASSERT_LE(std::abs(At(*rounded, y, x, k) - want), 0.5 + 1e-3)
              << h << "x" << w << " -> " << oh << "x" << ow << " at " << y << "," << x;
        }
      }
    }
  }
}

TEST(ResizeTest, WholePixelRegionEqualsCropThenResize) {
  std::mt19937 rng(4);
  const Tensor in = MakeImage(50, 70, 3, [&](int64_t, int64_t, int64_t) { return rng() % 256; });
  for (ResizeMethod method : {ResizeMethod::kBilinear, ResizeMethod::kArea}) {
    for (const CropWindow& w : {CropWindow{0, 0, 50, 70}, CropWindow{3, 5, 20, 31},
                                CropWindow{49, 69, 1, 1}, CropWindow{10, 0, 40, 70}}) {
      auto cropped = Crop(in, w);
      ASSERT_TRUE(cropped.ok());
      for (auto [oh, ow] : std::vector<std::pair<int64_t, int64_t>>{{8, 9}, {33, 47}}) {
        auto want = ResizeRounded(*cropped, oh, ow, method);
        auto got =
            ResizeRounded(in,
                          ResizeRegion{static_cast<double>(w.y), static_cast<double>(w.x),
                                       static_cast<double>(w.height), static_cast<double>(w.width)},
                          oh, ow, method);
        ASSERT_TRUE(want.ok() && got.ok());
        EXPECT_EQ(MaxAbsDiff(*got, *want), 0) << w.DebugString();
      }
    }
  }
}

TEST(ResizeTest, FractionalRegionHandComputed) {
  // A 3x3 image; the region [0.5, 2.5) x [0.5, 2.5).
  const Tensor in = FloatImage(3, 3, 1, {0, 10, 20, 30, 40, 50, 60, 70, 80});
  const ResizeRegion region{0.5, 0.5, 2, 2};
  // Bilinear to 2x2: samples at 0.5 + (o + 0.5) - 0.5 = o + 0.5, between pixel centres: the mean
  // of each 2x2 block.
  auto bilinear = Resize(in, region, 2, 2);
  ASSERT_TRUE(bilinear.ok());
  EXPECT_FLOAT_EQ(FAt(*bilinear, 0, 0, 0), 20);
  EXPECT_FLOAT_EQ(FAt(*bilinear, 0, 1, 0), 30);
  EXPECT_FLOAT_EQ(FAt(*bilinear, 1, 0, 0), 50);
  EXPECT_FLOAT_EQ(FAt(*bilinear, 1, 1, 0), 60);
  // Area to 1x1: pixel weights 1/4 (centre), 1/8 (edges), 1/16 (corners).
  auto area = Resize(in, region, 1, 1, ResizeMethod::kArea);
  ASSERT_TRUE(area.ok());
  EXPECT_FLOAT_EQ(FAt(*area, 0, 0, 0),
                  40 / 4.0f + (10 + 30 + 50 + 70) / 8.0f + (0 + 20 + 60 + 80) / 16.0f);
  // Bilinear samples stay on the centres of the touched pixels: a region inside one pixel gives
  // that pixel.
  auto inside = Resize(in, ResizeRegion{1.25, 2.25, 0.5, 0.5}, 3, 3);
  ASSERT_TRUE(inside.ok());
  for (float v : inside->flat<float>()) EXPECT_FLOAT_EQ(v, 50);
}

TEST(ResizeTest, Errors) {
  const Tensor in = MakeImage(4, 4, 3, [](int64_t, int64_t, int64_t) { return 0; });
  EXPECT_EQ(Resize(in, 0, 4).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Resize(in, 4, -1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Resize(Tensor::FromVector<int32_t>({1, 2, 3}), 2, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto int_image = Tensor::FromVector<int32_t>({1, 2, 3, 4}, Shape{2, 2, 1});
  EXPECT_EQ(Resize(*int_image, 2, 2).status().code(), absl::StatusCode::kInvalidArgument);
  for (const ResizeRegion& r : {ResizeRegion{0, 0, 0, 4}, ResizeRegion{-0.5, 0, 2, 2},
                                ResizeRegion{3, 0, 1.5, 2}, ResizeRegion{0, 0, 4, 4.01}}) {
    auto out = Resize(in, r, 2, 2);
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << r.DebugString();
    EXPECT_THAT(out.status().message(), ::testing::HasSubstr("region"));
  }
}

// The fused output stage against the separate ops, bitwise, for every method, channel count,
// flip and region (including ones whose rounding lands on .5 boundaries and the image edges).
TEST(ResizeTest, FusedFlipAndNormalizeEqualSeparateOps) {
  std::mt19937 rng(3);
  for (int channels : {1, 3, 4}) {
    const Tensor in = MakeImage(37, 53, channels, [&](int64_t, int64_t, int64_t) {
      return static_cast<uint8_t>(rng() % 256);
    });
    const std::vector<float> mean = {0.485f, 0.456f, 0.406f, 0.5f};
    const std::vector<float> stddev = {0.229f, 0.224f, 0.225f, 0.25f};
    auto table = NormalizeTable::Create(channels, absl::MakeSpan(mean).subspan(0, channels),
                                        absl::MakeSpan(stddev).subspan(0, channels));
    ASSERT_TRUE(table.ok()) << table.status();
    for (ResizeMethod method : {ResizeMethod::kBilinear, ResizeMethod::kArea}) {
      for (const ResizeRegion& r : {ResizeRegion{0, 0, 37, 53}, ResizeRegion{3, 5, 20.5, 31.25},
                                    ResizeRegion{36, 52, 1, 1}}) {
        for (auto [oh, ow] : {std::pair<int64_t, int64_t>{24, 24}, {50, 11}, {1, 1}}) {
          auto plain = ResizeRounded(in, r, oh, ow, method);
          ASSERT_TRUE(plain.ok()) << plain.status();
          auto flipped = FlipLeftRight(*plain);
          ASSERT_TRUE(flipped.ok());
          for (bool flip : {false, true}) {
            const Tensor& ref_u8 = flip ? *flipped : *plain;
            auto ref = Normalize(ref_u8, absl::MakeSpan(mean).subspan(0, channels),
                                 absl::MakeSpan(stddev).subspan(0, channels));
            ASSERT_TRUE(ref.ok());
            auto fused = Resize(in, r, oh, ow, method,
                                ResizeOutput{.flip_left_right = flip, .normalize = &*table});
            ASSERT_TRUE(fused.ok()) << fused.status();
            EXPECT_TRUE(fused->Equals(*ref)) << channels << " channels, " << r.DebugString()
                                             << " -> " << oh << "x" << ow << ", flip " << flip;
            auto flip_only = Resize(in, r, oh, ow, method, ResizeOutput{.flip_left_right = flip});
            ASSERT_TRUE(flip_only.ok());
            EXPECT_TRUE(flip_only->Equals(ref_u8));
          }
        }
      }
    }
  }
}

TEST(ResizeTest, FusedFlipOfFloatImage) {
  const Tensor in = FloatImage(2, 3, 1, {0, 1, 2, 3, 4, 5});
  auto out = Resize(in, ResizeRegion{0, 0, 2, 3}, 2, 3, ResizeMethod::kBilinear,
                    ResizeOutput{.flip_left_right = true});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->dtype(), DType::kFloat32);
  EXPECT_EQ(out->data<float>()[0], 2.0f);
  EXPECT_EQ(out->data<float>()[2], 0.0f);
  EXPECT_EQ(out->data<float>()[3], 5.0f);
}

TEST(ResizeTest, WritesIntoADestination) {
  const Tensor in = MakeImage(9, 7, 3, [](int64_t y, int64_t x, int64_t c) {
    return static_cast<uint8_t>(y * 20 + x * 3 + c);
  });
  auto table = NormalizeTable::Create(3, {0.5f}, {0.25f});
  ASSERT_TRUE(table.ok());
  const ResizeRegion all{0, 0, 9, 7};
  auto ref = Resize(in, all, 4, 5, ResizeMethod::kBilinear, ResizeOutput{.normalize = &*table});
  ASSERT_TRUE(ref.ok());
  Tensor dest(DType::kFloat32, Shape{4, 5, 3});
  auto out = Resize(in, all, 4, 5, ResizeMethod::kBilinear,
                    ResizeOutput{.normalize = &*table, .destination = &dest});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->SharesBufferWith(dest));
  EXPECT_TRUE(dest.Equals(*ref));
  Tensor wrong(DType::kUint8, Shape{4, 5, 3});
  auto bad = Resize(in, all, 4, 5, ResizeMethod::kBilinear,
                    ResizeOutput{.normalize = &*table, .destination = &wrong});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("destination"));
}

// Streaming stores change how the result is written, never what: uint8 and normalized float
// results, into new tensors and into destinations at offsets that are not 16-byte aligned.
TEST(ResizeTest, StreamingStoresWriteTheSameResult) {
  const Tensor in = MakeImage(31, 29, 3, [](int64_t y, int64_t x, int64_t c) {
    return static_cast<uint8_t>((y * 37 + x * 11 + c * 5) % 256);
  });
  auto table = NormalizeTable::Create(3, kImageNetMean, kImageNetStd);
  ASSERT_TRUE(table.ok());
  const ResizeRegion r{2, 3, 25.5, 20};
  for (bool flip : {false, true}) {
    const NormalizeTable* tables[] = {nullptr, &*table};
    for (const NormalizeTable* t : tables) {
      auto want = Resize(in, r, 13, 7, ResizeMethod::kBilinear,
                         ResizeOutput{.flip_left_right = flip, .normalize = t});
      ASSERT_TRUE(want.ok());
      auto got =
          Resize(in, r, 13, 7, ResizeMethod::kBilinear,
                 ResizeOutput{.flip_left_right = flip, .normalize = t, .streaming_stores = true});
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(got->Equals(*want));
      // A destination 4 bytes into its buffer (rows of 21 values: heads and tails everywhere).
      auto buffer = Buffer::Allocate(want->byte_size() + 4);
      auto dest = Tensor::FromBuffer(want->dtype(), want->shape(), buffer, 4);
      ASSERT_TRUE(dest.ok());
      auto into = Resize(in, r, 13, 7, ResizeMethod::kBilinear,
                         ResizeOutput{.flip_left_right = flip,
                                      .normalize = t,
                                      .destination = &*dest,
                                      .streaming_stores = true});
      ASSERT_TRUE(into.ok()) << into.status();
      EXPECT_TRUE(dest->Equals(*want)) << "flip " << flip << " normalize " << (t != nullptr);
    }
  }
}

// The fused 3-channel normalize path (vector kernel, 4 pixels at a time, and its per-pixel tail)
// against the separate ops, bitwise: widths around multiples of 4, 1-pixel-wide regions and
// images, upscaling and downscaling, flipped or not, into new tensors and into destinations
// that are 16-byte aligned (streamed directly) or not (staged), with and without streaming.
TEST(ResizeTest, FusedNormalizeOfThreeChannelsEqualsSeparateOps) {
  std::mt19937 rng(5);
  auto table = NormalizeTable::Create(3, kImageNetMean, kImageNetStd);
  ASSERT_TRUE(table.ok());
  const Tensor wide = MakeImage(
      23, 41, 3, [&](int64_t, int64_t, int64_t) { return static_cast<uint8_t>(rng() % 256); });
  const Tensor narrow = MakeImage(
      9, 1, 3, [&](int64_t, int64_t, int64_t) { return static_cast<uint8_t>(rng() % 256); });
  struct Case {
    const Tensor* in;
    ResizeRegion region;
  };
  const Case cases[] = {{&wide, {0, 0, 23, 41}}, {&wide, {2, 3, 17.5, 30.25}},
                        {&wide, {4, 40, 10, 1}}, {&wide, {1, 7.5, 20, 0.5}},
                        {&narrow, {0, 0, 9, 1}}, {&narrow, {2.5, 0, 3, 1}}};
  for (const Case& c : cases) {
    for (int64_t ow : {1, 2, 3, 4, 5, 7, 8, 9, 13, 64, 67}) {
      const int64_t oh = 5;
      auto plain = ResizeRounded(*c.in, c.region, oh, ow);
      ASSERT_TRUE(plain.ok()) << plain.status();
      for (bool flip : {false, true}) {
        auto flipped = flip ? FlipLeftRight(*plain) : absl::StatusOr<Tensor>(*plain);
        ASSERT_TRUE(flipped.ok());
        auto want = Normalize(*flipped, kImageNetMean, kImageNetStd);
        ASSERT_TRUE(want.ok());
        const std::string what =
            absl::StrCat(c.region.DebugString(), " of ", c.in->shape().DebugString(), " -> ", oh,
                         "x", ow, ", flip ", flip);
        auto fused = Resize(*c.in, c.region, oh, ow, ResizeMethod::kBilinear,
                            ResizeOutput{.flip_left_right = flip, .normalize = &*table});
        ASSERT_TRUE(fused.ok()) << fused.status();
        EXPECT_TRUE(fused->Equals(*want)) << what;
        for (size_t offset : {0, 4, 8, 12, 16}) {
          for (bool stream : {false, true}) {
            auto buffer = Buffer::Allocate(want->byte_size() + offset);
            auto dest = Tensor::FromBuffer(DType::kFloat32, want->shape(), buffer, offset);
            ASSERT_TRUE(dest.ok());
            auto into = Resize(*c.in, c.region, oh, ow, ResizeMethod::kBilinear,
                               ResizeOutput{.flip_left_right = flip,
                                            .normalize = &*table,
                                            .destination = &*dest,
                                            .streaming_stores = stream});
            ASSERT_TRUE(into.ok()) << into.status();
            EXPECT_TRUE(dest->Equals(*want))
                << what << ", offset " << offset << ", streaming " << stream;
          }
        }
      }
    }
  }
}

TEST(ResizeTest, FusedNormalizeNeedsAUint8ImageWithTheTablesChannels) {
  auto table = NormalizeTable::Create(3, {0.5f}, {0.25f});
  ASSERT_TRUE(table.ok());
  const Tensor gray = MakeImage(4, 4, 1, [](int64_t, int64_t, int64_t) { return 7; });
  const Tensor floats = FloatImage(1, 1, 3, {1, 2, 3});
  for (const Tensor* in : {&gray, &floats}) {
    auto out = Resize(*in, ResizeRegion{0, 0, 1, 1}, 2, 2, ResizeMethod::kBilinear,
                      ResizeOutput{.normalize = &*table});
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(out.status().message(), ::testing::HasSubstr("3 channels"));
  }
}

}  // namespace
}  // namespace sluice
