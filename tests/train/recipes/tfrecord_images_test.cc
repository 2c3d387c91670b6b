#include "train/recipes/tfrecord_images.h"

#include <fstream>
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
using ::sluice::train::recipes::testing::WriteRawImages;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// What `sluice convert fashion-mnist` writes, small: 30 training and 12 test images of 4x6.
class TFRecordImagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(WriteRawImages(dir_.File("train-00000-of-00002.tfrecord"), 20));
    ASSERT_NO_FATAL_FAILURE(WriteRawImages(dir_.File("train-00001-of-00002.tfrecord"), 10));
    ASSERT_NO_FATAL_FAILURE(WriteRawImages(dir_.File("test-00000-of-00001.tfrecord"), 12));
  }
  int64_t Images(const Dataset& batches) {
    int64_t images = 0;
    for (const Element& batch : ReadAll(batches)) images += batch[0].shape()[0];
    return images;
  }
  ScopedTempDir dir_;
};

TEST_F(TFRecordImagesTest, TrainAndTestBatchesOfTheFolder) {
  std::ofstream(dir_.File("labels.txt")) << "zero\none\ntwo\nthree\nfour\nfive\nsix\nseven\n"
                                            "eight\nnine\n";
  absl::StatusOr<LabeledImages> images = TFRecordImages({.dir = dir_.path(), .batch_size = 8});
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_EQ(images->train_records, 30);
  EXPECT_EQ(images->classes, 10);
  ASSERT_EQ(images->class_names.size(), 10u);
  EXPECT_EQ(images->class_names[3], "three");
  EXPECT_THAT(images->test_source, HasSubstr("test-*.tfrecord"));
  const std::vector<Element> train = ReadAll(images->train);
  ASSERT_EQ(train.size(), 4u);  // 8, 8, 8, 6
  EXPECT_EQ(train[0][0].shape(), (Shape{8, 4, 6, 1}));
  EXPECT_EQ(train[0][0].dtype(), DType::kFloat32);
  const std::vector<Element> test = ReadAll(images->test);
  ASSERT_EQ(test.size(), 1u);  // the test set's batches are of 256
  EXPECT_EQ(test[0][0].shape(), (Shape{12, 4, 6, 1}));
  // Unshuffled, in the file's order: image i is (i * 25) / 255.
  EXPECT_FLOAT_EQ(test[0][0].data<float>()[24 * 3], 75.0f / 255);
}

TEST_F(TFRecordImagesTest, LimitCountsAndReadsTheFirstRecordsOnly) {
  absl::StatusOr<LabeledImages> images =
      TFRecordImages({.dir = dir_.path(), .batch_size = 4, .limit = 9});
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_EQ(images->train_records, 9);
  EXPECT_EQ(Images(images->train), 9);
  EXPECT_EQ(Images(images->test), 12);
}

TEST_F(TFRecordImagesTest, WithoutLabelsTheClassesAreNumbered) {
  absl::StatusOr<LabeledImages> images = TFRecordImages({.dir = dir_.path()});
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_THAT(images->class_names, ElementsAre("0", "1", "2", "3", "4", "5", "6", "7", "8", "9"));
}

// Both augmentations keep the batches' shapes and every image; pad-crop moves pixels in the
// decode, keras on the batch.
TEST_F(TFRecordImagesTest, EitherAugmentationKeepsTheBatches) {
  for (Augmentation augmentation : {Augmentation::kPadCrop, Augmentation::kKeras}) {
    SCOPED_TRACE(AugmentationName(augmentation));
    absl::StatusOr<LabeledImages> images = TFRecordImages(
        {.dir = dir_.path(), .batch_size = 8, .augmentation = augmentation, .seed = 1});
    ASSERT_TRUE(images.ok()) << images.status();
    const std::vector<Element> train = ReadAll(images->train);
    ASSERT_EQ(train.size(), 4u);
    EXPECT_EQ(train[0][0].shape(), (Shape{8, 4, 6, 1}));
    EXPECT_EQ(Images(images->train), 30);
  }
}

// `sluice convert images` of a folder of photos writes its own classes: --data's pipelines (10
// classes, one size of grayscale image) cannot train on them, and the error says what can.
TEST_F(TFRecordImagesTest, ALabelsFileOfAnotherDataSetPointsToImages) {
  std::ofstream(dir_.File("labels.txt")) << "cat\ndog\n";
  absl::StatusOr<LabeledImages> images = TFRecordImages({.dir = dir_.path()});
  EXPECT_TRUE(absl::IsFailedPrecondition(images.status())) << images.status();
  EXPECT_THAT(images.status().message(), HasSubstr("labels.txt names 2 classes"));
  EXPECT_THAT(images.status().message(), HasSubstr("--images ROOT --image-size N"));
}

// Images of another size than the first record's (a photo set's shards) fail naming their record
// and what to train on instead, not their batch with mismatched shapes; skipped with skip_errors.
TEST_F(TFRecordImagesTest, AnImageOfAnotherSizeIsNamedByItsRecord) {
  ASSERT_NO_FATAL_FAILURE(
      WriteRawImages(dir_.File("train-00001-of-00002.tfrecord"), 10, /*height=*/3, /*width=*/8));
  absl::StatusOr<LabeledImages> images = TFRecordImages({.dir = dir_.path(), .batch_size = 8});
  ASSERT_TRUE(images.ok()) << images.status();
  absl::Status failed;
  auto it = images->train.MakeIterator();
  for (int i = 0; i < 10 && failed.ok(); ++i) failed = it->GetNext().status();
  EXPECT_TRUE(absl::IsInvalidArgument(failed)) << failed;
  EXPECT_THAT(failed.message(), HasSubstr("train-00001-of-00002.tfrecord: record "));
  EXPECT_THAT(failed.message(), HasSubstr(": a 3 x 8 image, not 4 x 6 (record 0 of " +
                                          dir_.File("train-00000-of-00002.tfrecord") + "'s)"));
  EXPECT_THAT(failed.message(), HasSubstr("--images ROOT --image-size N"));

  SkippedLog skipped;  // called from the pipeline's threads
  images = TFRecordImages(
      {.dir = dir_.path(), .batch_size = 8, .skip_errors = true, .on_skipped = skipped.Callback()});
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_EQ(Images(images->train), 20);
  EXPECT_EQ(skipped.messages().size(), 10u);
}

// The test set's skips go to on_skipped_test when it is set, so that a run can say what training
// itself lost; without it, to on_skipped.
TEST_F(TFRecordImagesTest, TheTestSetsSkipsCanBeToldApart) {
  ASSERT_NO_FATAL_FAILURE(WriteRawImages(dir_.File("test-00000-of-00001.tfrecord"), 5, 3, 8));
  ASSERT_NO_FATAL_FAILURE(
      WriteRawImages(dir_.File("train-00001-of-00002.tfrecord"), 2, /*height=*/3, /*width=*/8));
  SkippedLog train, test;
  absl::StatusOr<LabeledImages> images = TFRecordImages({.dir = dir_.path(),
                                                         .batch_size = 8,
                                                         .skip_errors = true,
                                                         .on_skipped = train.Callback(),
                                                         .on_skipped_test = test.Callback()});
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_EQ(Images(images->train), 20);
  EXPECT_EQ(Images(images->test), 0);
  EXPECT_EQ(train.messages().size(), 2u);
  ASSERT_EQ(test.messages().size(), 5u);
  EXPECT_THAT(test.messages()[0], HasSubstr("test-00000-of-00001.tfrecord: record "));

  SkippedLog both;
  images = TFRecordImages(
      {.dir = dir_.path(), .batch_size = 8, .skip_errors = true, .on_skipped = both.Callback()});
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_EQ(Images(images->train), 20);
  EXPECT_EQ(Images(images->test), 0);
  EXPECT_EQ(both.messages().size(), 7u);
}

TEST(TFRecordImagesErrorsTest, AFolderWithoutRecordsIsNamed) {
  ScopedTempDir empty;
  absl::StatusOr<LabeledImages> images = TFRecordImages({.dir = empty.path()});
  EXPECT_TRUE(absl::IsNotFound(images.status())) << images.status();
  EXPECT_THAT(images.status().message(), HasSubstr(empty.path() + "/train-*.tfrecord"));
}

}  // namespace
}  // namespace sluice::train::recipes
