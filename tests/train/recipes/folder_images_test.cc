#include "train/recipes/folder_images.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/skipped_log.h"
#include "tests/temp_dir.h"
#include "tests/train/recipes/recipe_test_util.h"

namespace sluice::train::recipes {
namespace {

using ::sluice::testing::ScopedTempDir;
using ::sluice::testing::SkippedLog;
using ::sluice::train::recipes::testing::ReadAll;
using ::sluice::train::recipes::testing::WriteDarkAndLightTree;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class FolderImagesTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(WriteDarkAndLightTree(dir_.path())); }
  ScopedTempDir dir_;
};

// 40 images, 20% (8) held out: 32 to train on, resized to 8x8 RGB and scaled to [0, 1].
TEST_F(FolderImagesTest, SplitsResizesAndScales) {
  absl::StatusOr<LabeledImages> images =
      FolderImages({.dir = dir_.path(), .image_size = 8, .batch_size = 8, .seed = 1});
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_EQ(images->train_records, 32);
  EXPECT_EQ(images->classes, 2);
  EXPECT_THAT(images->class_names, ElementsAre("dark", "light"));
  EXPECT_THAT(images->test_source, HasSubstr("(validation subset)"));
  const std::vector<Element> train = ReadAll(images->train);
  ASSERT_EQ(train.size(), 4u);
  EXPECT_EQ(train[0][0].shape(), (Shape{8, 8, 8, 3}));
  const std::vector<Element> test = ReadAll(images->test);
  ASSERT_EQ(test.size(), 1u);
  ASSERT_EQ(test[0][0].shape(), (Shape{8, 8, 8, 3}));
  // Dark images are about 40 / 255, light ones about 200 / 255, by their labels.
  for (int64_t i = 0; i < 8; ++i) {
    const float pixel = test[0][0].data<float>()[i * 8 * 8 * 3];
    const int32_t label = test[0][1].data<int32_t>()[i];
    EXPECT_GE(pixel, 0);
    EXPECT_LE(pixel, 1);
    EXPECT_EQ(pixel > 0.5f, label == 1) << i;
  }
}

TEST_F(FolderImagesTest, LimitTakesWholeBatches) {
  absl::StatusOr<LabeledImages> images =
      FolderImages({.dir = dir_.path(), .image_size = 8, .batch_size = 8, .limit = 10});
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_EQ(images->train_records, 10);
  EXPECT_EQ(ReadAll(images->train).size(), 2u);  // ceil(10 / 8)
}

TEST_F(FolderImagesTest, PadCropIsForTFRecords) {
  absl::StatusOr<LabeledImages> images =
      FolderImages({.dir = dir_.path(), .augmentation = Augmentation::kPadCrop});
  EXPECT_TRUE(absl::IsInvalidArgument(images.status())) << images.status();
}

// One class folder is not a classification task: said as such, not as a model shape problem.
TEST(FolderImagesOneClassTest, OneClassFolderIsRefused) {
  ScopedTempDir dir;
  ASSERT_NO_FATAL_FAILURE(WriteDarkAndLightTree(dir.path()));
  std::filesystem::remove_all(dir.File("light"));
  absl::StatusOr<LabeledImages> images =
      FolderImages({.dir = dir.path(), .image_size = 8, .batch_size = 8, .seed = 1});
  EXPECT_TRUE(absl::IsInvalidArgument(images.status())) << images.status();
  EXPECT_THAT(images.status().message(),
              HasSubstr(": 1 class folder (dark); a classifier needs at least 2"));
}

// A PNG (listed, as Keras lists it) is refused before training with what to do, where it failed
// the run when an epoch met it; with skip_errors it is skipped and counted as it is met.
TEST_F(FolderImagesTest, ImagesOtherThanJpegAreRefusedBeforeTraining) {
  const std::string png = dir_.File("light/zz.PNG");
  std::ofstream(png, std::ios::binary) << "\x89PNG\r\n\x1a\n not really";
  absl::StatusOr<LabeledImages> images =
      FolderImages({.dir = dir_.path(), .image_size = 8, .batch_size = 8, .seed = 1});
  EXPECT_TRUE(absl::IsInvalidArgument(images.status())) << images.status();
  EXPECT_THAT(images.status().message(), HasSubstr(": 1 of the images is not JPEG (the first: " +
                                                   png + "); sluice decodes JPEG only"));
  EXPECT_THAT(images.status().message(), HasSubstr("--skip-errors"));

  SkippedLog skipped;
  images = FolderImages({.dir = dir_.path(),
                         .image_size = 8,
                         .batch_size = 8,
                         .skip_errors = true,
                         .on_skipped = skipped.Callback(),
                         .seed = 1});
  ASSERT_TRUE(images.ok()) << images.status();
  int64_t read = 0;
  for (const Element& batch : ReadAll(images->train)) read += batch[0].shape()[0];
  for (const Element& batch : ReadAll(images->test)) read += batch[0].shape()[0];
  EXPECT_EQ(read, 40);  // of 41 files
  ASSERT_EQ(skipped.messages().size(), 1u);
  EXPECT_THAT(skipped.messages()[0], HasSubstr(png));
}

}  // namespace
}  // namespace sluice::train::recipes
