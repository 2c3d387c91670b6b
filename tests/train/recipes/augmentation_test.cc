#include "train/recipes/augmentation.h"

#include <vector>

#include "core/tensor.h"
#include "dataset/options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/train/recipes/recipe_test_util.h"

namespace sluice::train::recipes {
namespace {

using ::sluice::train::recipes::testing::ReadAll;
using ::testing::HasSubstr;

TEST(AugmentationTest, NamesRoundTrip) {
  for (Augmentation a : {Augmentation::kNone, Augmentation::kPadCrop, Augmentation::kKeras}) {
    absl::StatusOr<Augmentation> parsed = AugmentationFromName(AugmentationName(a));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, a);
  }
  EXPECT_EQ(AugmentationName(Augmentation::kPadCrop), "pad-crop");
  absl::StatusOr<Augmentation> unknown = AugmentationFromName("mixup");
  EXPECT_TRUE(absl::IsInvalidArgument(unknown.status()));
  EXPECT_THAT(unknown.status().message(), HasSubstr("not 'mixup'"));
}

// Two batches of two 8x8 grayscale images, pixel k of image i = i * 64 + k (all distinct).
Dataset Batches() {
  Tensor images(DType::kFloat32, Shape{4, 8, 8, 1});
  for (int i = 0; i < 4 * 64; ++i) images.data<float>()[i] = static_cast<float>(i);
  Tensor labels(DType::kInt64, Shape{4});
  for (int i = 0; i < 4; ++i) labels.data<int64_t>()[i] = i;
  Options options;
  options.seed = 5;
  return Dataset::FromTensorSlices({images, labels}).Batch(2).WithOptions(options);
}

TEST(AugmentationTest, WithoutAugmentOnlyRescales) {
  absl::StatusOr<Dataset> rescaled =
      KerasAugmentation(Batches(), {.augment = false, .rescale = 0.5f});
  ASSERT_TRUE(rescaled.ok()) << rescaled.status();
  const std::vector<Element> before = ReadAll(Batches());
  const std::vector<Element> after = ReadAll(*rescaled);
  ASSERT_EQ(after.size(), 2u);
  for (size_t b = 0; b < after.size(); ++b) {
    ASSERT_EQ(after[b][0].shape(), before[b][0].shape());
    for (int64_t k = 0; k < after[b][0].num_elements(); ++k) {
      EXPECT_EQ(after[b][0].data<float>()[k], 0.5f * before[b][0].data<float>()[k]);
    }
    EXPECT_EQ(after[b][1].data<int64_t>()[0], before[b][1].data<int64_t>()[0]);
  }
}

// Flip, translation and zoom move pixels: the images change, their shape does not, and a seeded
// pipeline built again augments the same way (a second iteration of the same one draws anew).
TEST(AugmentationTest, KerasLayersChangeTheImagesRepeatably) {
  absl::StatusOr<Dataset> augmented = KerasAugmentation(Batches());
  absl::StatusOr<Dataset> again = KerasAugmentation(Batches());
  ASSERT_TRUE(augmented.ok() && again.ok()) << augmented.status();
  const std::vector<Element> before = ReadAll(Batches());
  const std::vector<Element> first = ReadAll(*augmented);
  const std::vector<Element> second = ReadAll(*again);
  ASSERT_EQ(first.size(), 2u);
  int changed = 0;
  for (size_t b = 0; b < first.size(); ++b) {
    ASSERT_EQ(first[b][0].shape(), before[b][0].shape());
    for (int64_t k = 0; k < first[b][0].num_elements(); ++k) {
      changed += first[b][0].data<float>()[k] != before[b][0].data<float>()[k];
      ASSERT_EQ(first[b][0].data<float>()[k], second[b][0].data<float>()[k]) << b << " " << k;
    }
  }
  EXPECT_GT(changed, 64);
}

}  // namespace
}  // namespace sluice::train::recipes
