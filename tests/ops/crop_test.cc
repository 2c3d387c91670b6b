#include "ops/crop.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ops/image_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::At;
using ::sluice::testing::MakeImage;

int CropPattern(int64_t y, int64_t x, int64_t c) {
  return static_cast<int>((y * 17 + x * 5 + c) % 256);
}

TEST(CropTest, CopiesTheWindow) {
  const Tensor image = MakeImage(20, 30, 3, CropPattern);
  for (const CropWindow& w :
       {CropWindow{0, 0, 20, 30}, CropWindow{3, 4, 5, 6}, CropWindow{19, 29, 1, 1},
        CropWindow{0, 29, 20, 1}, CropWindow{19, 0, 1, 30}}) {
    auto out = Crop(image, w);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->shape(), (Shape{w.height, w.width, 3}));
    EXPECT_FALSE(out->SharesBufferWith(image));
    for (int64_t y = 0; y < w.height; ++y) {
      for (int64_t x = 0; x < w.width; ++x) {
        for (int c = 0; c < 3; ++c) ASSERT_EQ(At(*out, y, x, c), CropPattern(w.y + y, w.x + x, c));
      }
    }
  }
}

TEST(CropTest, AnyNumericDtype) {
  auto image = Tensor::FromVector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{3, 2, 2});
  ASSERT_TRUE(image.ok());
  auto out = Crop(*image, {1, 1, 2, 1});
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->Equals(*Tensor::FromVector<float>({6, 7, 10, 11}, Shape{2, 1, 2})));
}

TEST(CropTest, CenterCropRoundsTheOffsetDown) {
  const Tensor image = MakeImage(9, 10, 1, CropPattern);
  auto out = CenterCrop(image, 4, 3);  // Offsets (9 - 4) / 2 = 2 and (10 - 3) / 2 = 3.
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->shape(), (Shape{4, 3, 1}));
  EXPECT_EQ(At(*out, 0, 0, 0), CropPattern(2, 3, 0));
  EXPECT_EQ(At(*out, 3, 2, 0), CropPattern(5, 5, 0));
  auto whole = CenterCrop(image, 9, 10);
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(whole->Equals(image));
}

TEST(CropTest, Errors) {
  const Tensor image = MakeImage(9, 10, 3, CropPattern);
  for (const CropWindow& bad :
       {CropWindow{0, 0, 0, 1}, CropWindow{0, 0, 1, 0}, CropWindow{-1, 0, 2, 2},
        CropWindow{0, -1, 2, 2}, CropWindow{8, 0, 2, 2}, CropWindow{0, 9, 2, 2},
        CropWindow{0, 0, 10, 10}}) {
    auto out = Crop(image, bad);
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << bad.DebugString();
    EXPECT_THAT(out.status().message(), ::testing::HasSubstr("not inside"));
  }
  EXPECT_EQ(CenterCrop(image, 10, 5).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CenterCrop(image, 0, 5).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Crop(Tensor::FromVector<int32_t>({1, 2}), {0, 0, 1, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
