#include "ops/image_transform.h"

#include <numbers>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ops/augmentation_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Floats;
using ::sluice::testing::Positions;
using ::sluice::testing::Values;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::FloatNear;
using ::testing::Pointwise;

// One row [0 1 2 3] moved right by 2 pixels: what each fill mode puts in the two uncovered pixels
// (TensorFlow's documented patterns).
std::vector<float> ShiftRowBy2(FillMode mode, Interpolation interpolation) {
  const Tensor row = Floats({0, 1, 2, 3}, Shape{1, 4, 1});
  auto out = ImageProjectiveTransform(
      row, {TranslationTransform(0, 2)},
      {.fill_mode = mode, .interpolation = interpolation, .fill_value = -5});
  EXPECT_TRUE(out.ok()) << out.status();
  return Values(*out);
}

TEST(ImageProjectiveTransformTest, FillModesHandChecked) {
  for (Interpolation interpolation : {Interpolation::kNearest, Interpolation::kBilinear}) {
    // Output x samples input x - 2: -2 and -1 are outside.
    EXPECT_THAT(ShiftRowBy2(FillMode::kReflect, interpolation), ElementsAre(1, 0, 0, 1));
    EXPECT_THAT(ShiftRowBy2(FillMode::kWrap, interpolation), ElementsAre(2, 3, 0, 1));
    EXPECT_THAT(ShiftRowBy2(FillMode::kConstant, interpolation), ElementsAre(-5, -5, 0, 1));
    EXPECT_THAT(ShiftRowBy2(FillMode::kNearest, interpolation), ElementsAre(0, 0, 0, 1));
  }
}

TEST(ImageProjectiveTransformTest, HalfPixelShiftInterpolates) {
  const Tensor row = Floats({0, 10, 20, 30}, Shape{1, 4, 1});
  auto bilinear = ImageProjectiveTransform(row, {TranslationTransform(0, 0.5)},
                                           {.fill_mode = FillMode::kNearest});
  ASSERT_TRUE(bilinear.ok());
  // x - 0.5: -0.5 clamps to 0; then halfway between neighbours.
  EXPECT_THAT(Values(*bilinear), ElementsAre(0, 5, 15, 25));
  auto nearest = ImageProjectiveTransform(
      row, {TranslationTransform(0, 0.5)},
      {.fill_mode = FillMode::kNearest, .interpolation = Interpolation::kNearest});
  ASSERT_TRUE(nearest.ok());
  // round(x - 0.5) rounds halves away from zero: 0.5 -> 1, 1.5 -> 2, 2.5 -> 3.
  EXPECT_THAT(Values(*nearest), ElementsAre(0, 10, 20, 30));
}

TEST(ImageProjectiveTransformTest, RotationBy90DegreesIsExact) {
  // 3x3 [[0 1 2] [10 11 12] [20 21 22]] turned a quarter counter-clockwise: the right column
  // becomes the top row.
  const Tensor image = Positions(1, 3, 3);
  for (Interpolation interpolation : {Interpolation::kNearest, Interpolation::kBilinear}) {
    auto out = ImageProjectiveTransform(image, {RotationTransform(std::numbers::pi / 2, 3, 3)},
                                        {.interpolation = interpolation});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(Values(*out),
                Pointwise(FloatNear(1e-4), std::vector<float>{2, 12, 22, 1, 11, 21, 0, 10, 20}));
  }
  // A half turn of a 2x3 image: both axes reversed.
  auto half =
      ImageProjectiveTransform(Positions(1, 2, 3), {RotationTransform(std::numbers::pi, 2, 3)});
  ASSERT_TRUE(half.ok());
  EXPECT_THAT(Values(*half), Pointwise(FloatNear(1e-4), std::vector<float>{12, 11, 10, 2, 1, 0}));
}

TEST(ImageProjectiveTransformTest, ZoomBy2IsExact) {
  // 1x5 row [0 1 2 3 4], zoom 2 about the centre: output x samples 2x - 2, so -2, 0, 2, 4, 6;
  // reflect maps -2 to 1 and 6 to 3.
  const Tensor row = Floats({0, 1, 2, 3, 4}, Shape{1, 5, 1});
  auto out = ImageProjectiveTransform(row, {ZoomTransform(1, 2, 1, 5)});
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Values(*out), ElementsAre(1, 0, 2, 4, 3));
  // Zooming in by 1/2 on 5 pixels: output x samples x / 2 + 1: 1, 1.5, 2, 2.5, 3.
  auto in = ImageProjectiveTransform(row, {ZoomTransform(1, 0.5, 1, 5)});
  ASSERT_TRUE(in.ok());
  EXPECT_THAT(Values(*in), ElementsAre(1, 1.5, 2, 2.5, 3));
}

TEST(ImageProjectiveTransformTest, EachImageOfABatchHasItsTransformAndChannelsMoveTogether) {
  Tensor batch(DType::kFloat32, Shape{2, 1, 3, 2});
  const std::vector<float> values = {0, 100, 1, 101, 2, 102, 5, 105, 6, 106, 7, 107};
  for (size_t i = 0; i < values.size(); ++i) batch.data<float>()[i] = values[i];
  auto out =
      ImageProjectiveTransform(batch, {TranslationTransform(0, 1), TranslationTransform(0, -1)},
                               {.fill_mode = FillMode::kConstant});
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Values(*out), ElementsAreArray({0, 0, 0, 100, 1, 101, 6, 106, 7, 107, 0, 0}));
}

TEST(ImageProjectiveTransformTest, Errors) {
  const Tensor image = Positions(2, 3, 3);
  EXPECT_EQ(ImageProjectiveTransform(image, {TranslationTransform(0, 1)}).status().code(),
            absl::StatusCode::kInvalidArgument);  // 1 transform, 2 images
  Tensor bytes(DType::kUint8, Shape{3, 3, 1});
  EXPECT_EQ(ImageProjectiveTransform(bytes, {TranslationTransform(0, 1)}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
