#include "ops/normalize.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/float16.h"
#include "gtest/gtest.h"
#include "tests/ops/image_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::MakeImage;

// A 1x3 RGB image with pixels (0, 0, 0), (128, 128, 128), (255, 255, 255).
Tensor ThreeGrays() {
  return MakeImage(1, 3, 3, [](int64_t, int64_t x, int64_t) {
    return std::vector<int>{0, 128, 255}[x];
  });
}

TEST(NormalizeTest, Float32ImageNetHandChecked) {
  auto out = Normalize(ThreeGrays(), kImageNetMean, kImageNetStd);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->dtype(), DType::kFloat32);
  ASSERT_EQ(out->shape(), (Shape{1, 3, 3}));
  // (x / 255 - mean) / std, computed by hand in double.
  const double want[3][3] = {{-2.1179039301310043, -2.0357142857142856, -1.8044444444444445},
                             {0.0740645603219454, 0.20518207282913153, 0.42649237472766865},
                             {2.2489082969432315, 2.428571428571429, 2.6399999999999997}};
  const float* p = out->data<float>();
  for (int x = 0; x < 3; ++x) {
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(p[x * 3 + c], want[x][c], 2e-6) << x << "," << c;
  }
}

TEST(NormalizeTest, Float32IsTorchvisionsOperationOrder) {
  // torchvision: ToTensor divides by 255 in float32, Normalize subtracts then divides in float32.
  const Tensor image =
      MakeImage(16, 16, 3, [](int64_t y, int64_t x, int64_t c) { return (y * 16 + x + c) % 256; });
  auto out = Normalize(image, kImageNetMean, kImageNetStd);
  ASSERT_TRUE(out.ok());
  const uint8_t* in = image.data<uint8_t>();
  const float* p = out->data<float>();
  for (int64_t i = 0; i < image.num_elements(); ++i) {
    const int c = static_cast<int>(i % 3);
    volatile float x = static_cast<float>(in[i]) / 255.0f;
    volatile float centred = x - kImageNetMean[c];
    const float want = centred / kImageNetStd[c];
    ASSERT_EQ(p[i], want) << i;
  }
}

TEST(NormalizeTest, HalfPrecisionOutputsHandChecked) {
  // mean = std = 0.5 maps 0 -> -1, 51 -> (0.2 - 0.5) / 0.5 = -0.6, 255 -> 1.
  const Tensor image = MakeImage(1, 3, 1, [](int64_t, int64_t x, int64_t) {
    return std::vector<int>{0, 51, 255}[x];
  });
  const std::vector<float> half = {0.5f};
  auto f32 = Normalize(image, half, half);
  auto f16 = Normalize(image, half, half, {.dtype = DType::kFloat16});
  auto bf16 = Normalize(image, half, half, {.dtype = DType::kBFloat16});
  ASSERT_TRUE(f32.ok() && f16.ok() && bf16.ok());
  EXPECT_EQ(f32->data<float>()[0], -1.0f);
  EXPECT_EQ(f32->data<float>()[1], -0.6f);  // float32 -0.6 is 0xBF19999A.
  EXPECT_EQ(f32->data<float>()[2], 1.0f);
  ASSERT_EQ(f16->dtype(), DType::kFloat16);
  // float16: -1 = 0xBC00; -0.6 = -(1 + 205/1024) * 2^-1 = 0xB8CD; 1 = 0x3C00.
  EXPECT_EQ(f16->data<Float16>()[0].bits, 0xBC00);
  EXPECT_EQ(f16->data<Float16>()[1].bits, 0xB8CD);
  EXPECT_EQ(f16->data<Float16>()[2].bits, 0x3C00);
  ASSERT_EQ(bf16->dtype(), DType::kBFloat16);
  // bfloat16: the top half of the float32, rounded: 0xBF19|999A rounds up to 0xBF1A.
  EXPECT_EQ(bf16->data<BFloat16>()[0].bits, 0xBF80);
  EXPECT_EQ(bf16->data<BFloat16>()[1].bits, 0xBF1A);
  EXPECT_EQ(bf16->data<BFloat16>()[2].bits, 0x3F80);
}

TEST(NormalizeTest, ChannelsFirst) {
  const Tensor image =
      MakeImage(2, 3, 3, [](int64_t y, int64_t x, int64_t c) { return 10 * (y * 3 + x) + c; });
  const std::vector<float> zero = {0, 0, 0}, one = {1, 1, 1};
  auto hwc = Normalize(image, zero, one);
  auto chw = Normalize(image, zero, one, {.channels_first = true});
  ASSERT_TRUE(hwc.ok() && chw.ok());
  ASSERT_EQ(chw->shape(), (Shape{3, 2, 3}));
  for (int y = 0; y < 2; ++y) {
    for (int x = 0; x < 3; ++x) {
      for (int c = 0; c < 3; ++c) {
        const float want = static_cast<float>(10 * (y * 3 + x) + c) / 255.0f;
        EXPECT_EQ(chw->data<float>()[(c * 2 + y) * 3 + x], want);
        EXPECT_EQ(hwc->data<float>()[(y * 3 + x) * 3 + c], want);
      }
    }
  }
  // Two channels take the general path.
  const Tensor two =
      MakeImage(2, 2, 2, [](int64_t y, int64_t x, int64_t c) { return 100 * c + 10 * y + x; });
  const std::vector<float> zero2 = {0, 0}, one2 = {1, 1};
  auto chw2 = Normalize(two, zero2, one2, {.channels_first = true});
  ASSERT_TRUE(chw2.ok());
  ASSERT_EQ(chw2->shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(chw2->data<float>()[1 * 4 + 1 * 2 + 0], 110.0f / 255.0f);  // c=1, y=1, x=0.
  EXPECT_EQ(chw2->data<float>()[0 * 4 + 0 * 2 + 1], 1.0f / 255.0f);    // c=0, y=0, x=1.
  auto chw16 = Normalize(image, zero, one, {.dtype = DType::kBFloat16, .channels_first = true});
  ASSERT_TRUE(chw16.ok());
  EXPECT_EQ(chw16->data<BFloat16>()[(2 * 2 + 1) * 3 + 2].bits, BFloat16(52.0f / 255.0f).bits);
}

TEST(NormalizeTest, GrayscaleAndBroadcastStatistics) {
  const Tensor gray =
      MakeImage(2, 2, 1, [](int64_t y, int64_t x, int64_t) { return 255 * ((y + x) % 2); });
  const std::vector<float> mean = {0.5f}, stddev = {0.25f};
  auto out = Normalize(gray, mean, stddev);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->data<float>()[0], -2.0f);
  EXPECT_EQ(out->data<float>()[1], 2.0f);
}

TEST(NormalizeTest, RescalingIsKerasMultiplyThenAdd) {
  const NormalizeTable identity = NormalizeTable::Rescaling(3);
  ASSERT_EQ(identity.channels(), 3);
  for (int v = 0; v < 256; ++v) ASSERT_EQ(identity.at(2)[v], static_cast<float>(v));
  // Keras' Rescaling(1/127.5, offset=-1): hand-checked ends and middle.
  const NormalizeTable centred = NormalizeTable::Rescaling(1, 1.0f / 127.5f, -1.0f);
  EXPECT_EQ(centred.at(0)[0], -1.0f);
  EXPECT_EQ(centred.at(0)[255], 1.0f);
  EXPECT_NEAR(centred.at(0)[128], 1.0f / 255.0f, 2e-7f);
}

TEST(NormalizeTest, ATableMadeOnceGivesTheBitsOfMeanAndStd) {
  const Tensor image = MakeImage(
      3, 4, 3, [](int64_t y, int64_t x, int64_t c) { return (97 * (y * 4 + x) + c) % 256; });
  const std::vector<float> mean = {0.485f, 0.456f, 0.406f}, stddev = {0.229f, 0.224f, 0.225f};
  auto table = NormalizeTable::Create(3, mean, stddev);
  ASSERT_TRUE(table.ok());
  for (const DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    for (const bool channels_first : {false, true}) {
      const NormalizeOptions options{.dtype = dtype, .channels_first = channels_first};
      auto from_statistics = Normalize(image, mean, stddev, options);
      auto from_table = Normalize(image, *table, options);
      ASSERT_TRUE(from_statistics.ok() && from_table.ok());
      ASSERT_EQ(from_table->shape(), from_statistics->shape());
      ASSERT_EQ(from_table->dtype(), dtype);
      EXPECT_EQ(
          std::memcmp(from_table->raw_data(), from_statistics->raw_data(), from_table->byte_size()),
          0)
          << DTypeName(dtype) << (channels_first ? " CHW" : " HWC");
    }
  }
  // Pixel (2, 3), channel 1, by hand: ((97 * 11 + 1) % 256 / 255 - 0.456) / 0.224.
  const float x = static_cast<float>((97 * 11 + 1) % 256) / 255.0f;
  EXPECT_EQ(Normalize(image, *table)->data<float>()[(2 * 4 + 3) * 3 + 1], (x - 0.456f) / 0.224f);
  // A table for another channel count is refused, naming both.
  const NormalizeTable gray = NormalizeTable::Rescaling(1);
  const absl::Status mismatch = Normalize(image, gray).status();
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.message().find("the image has 3 channels but the table was made for 1"),
            std::string::npos)
      << mismatch;
}

TEST(NormalizeTest, Errors) {
  const Tensor rgb = ThreeGrays();
  const std::vector<float> two = {0.5f, 0.5f}, zero_std = {1, 0, 1}, ok = {0.5f, 0.5f, 0.5f};
  EXPECT_EQ(Normalize(rgb, two, ok).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NormalizeTable::Create(1, ok, ok).status().message(),
            "Normalize: mean has 3 values and std 3 for an image of 1 channel: each takes one "
            "value");
  EXPECT_EQ(NormalizeTable::Create(3, two, ok).status().message(),
            "Normalize: mean has 2 values and std 3 for an image of 3 channels: each takes one "
            "value or 3");
  EXPECT_EQ(Normalize(rgb, ok, zero_std).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Normalize(rgb, ok, ok, {.dtype = DType::kInt32}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto floats = Tensor::FromVector<float>({0.1f, 0.2f, 0.3f}, Shape{1, 1, 3});
  EXPECT_EQ(Normalize(*floats, ok, ok).status().code(), absl::StatusCode::kInvalidArgument);
  // Without an image: what a binding checks once, where the op is made.
  EXPECT_TRUE(CheckNormalizeArguments(ok, ok, {}).ok());
  EXPECT_TRUE(CheckNormalizeArguments(two, ok, {.dtype = DType::kBFloat16}).ok());
  EXPECT_EQ(CheckNormalizeArguments(ok, ok, {.dtype = DType::kInt32}).message(),
            "Normalize: output dtype must be float32, bfloat16 or float16, got int32");
  EXPECT_EQ(CheckNormalizeArguments(ok, zero_std, {}).message(),
            "Normalize: std of channel 1 is 0");
  EXPECT_EQ(CheckNormalizeArguments({}, ok, {}).code(), absl::StatusCode::kInvalidArgument);
  const std::vector<float> nan_std = {1, NAN, 1}, inf_mean = {0, 0, INFINITY};
  EXPECT_EQ(CheckNormalizeArguments(ok, nan_std, {}).message(),
            "Normalize: the mean and std of channel 1 must be finite");
  EXPECT_EQ(CheckNormalizeArguments(inf_mean, {1.0f}, {}).message(),
            "Normalize: the mean and std of channel 2 must be finite");
}

}  // namespace
}  // namespace sluice
