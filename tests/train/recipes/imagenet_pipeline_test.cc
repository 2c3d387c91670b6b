#include "train/recipes/imagenet_pipeline.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/example_builder.h"
#include "io/tfrecord_writer.h"
#include "tests/temp_dir.h"
#include "tests/train/recipes/recipe_test_util.h"

namespace sluice::train::recipes {
namespace {

using ::sluice::testing::ScopedTempDir;
using ::sluice::train::recipes::testing::Jpeg;
using ::sluice::train::recipes::testing::ReadAll;
using ::testing::ElementsAre;

// Six JPEGs of 30x40 in a TFRecord file (labels 0..5), and the same as a folder per label.
class ImageNetPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto writer = TFRecordWriter::Open(dir_.File("images.tfrecord"));
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (int i = 0; i < 6; ++i) {
      const std::string jpeg = Jpeg(30, 40, 20 * i, i);
      ExampleBuilder example;
      example.AddBytes("image/encoded", {jpeg}).AddInt64("image/class/label", {i});
      const std::string record = example.Serialize();
      record_bytes_ += static_cast<int64_t>(record.size());
      ASSERT_TRUE((*writer)->Write(record).ok());
      dir_.Write("tree/class" + std::to_string(i) + "/image.jpg", jpeg);
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }

  ScopedTempDir dir_;
  int64_t record_bytes_ = 0;
};

TEST_F(ImageNetPipelineTest, CropsEveryImageIntoBatchesOnce) {
  auto counted = std::make_shared<std::atomic<int64_t>>(0);
  absl::StatusOr<Dataset> pipeline = ImageNetPipeline({.files = dir_.File("images.tfrecord"),
                                                       .batch_size = 4,
                                                       .image_size = 16,
                                                       .epochs = 1,
                                                       .record_bytes = counted});
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  const std::vector<Element> batches = ReadAll(*pipeline);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0][0].shape(), (Shape{4, 16, 16, 3}));
  EXPECT_EQ(batches[0][0].dtype(), DType::kFloat32);
  EXPECT_EQ(batches[1][0].shape(), (Shape{2, 16, 16, 3}));
  std::vector<int64_t> labels;
  for (const Element& batch : batches) {
    for (int64_t i = 0; i < batch[1].num_elements(); ++i) {
      labels.push_back(batch[1].data<int64_t>()[i]);
    }
  }
  std::sort(labels.begin(), labels.end());
  EXPECT_THAT(labels, ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_EQ(counted->load(), record_bytes_);
}

TEST_F(ImageNetPipelineTest, DecodeOnlyYieldsWholeImages) {
  absl::StatusOr<Dataset> pipeline =
      ImageNetPipeline({.images_dir = dir_.File("tree"), .decode_only = true, .epochs = 2});
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  const std::vector<Element> images = ReadAll(*pipeline);
  ASSERT_EQ(images.size(), 12u);
  for (const Element& image : images) EXPECT_EQ(image[0].shape(), (Shape{30, 40, 3}));
}

// A record whose bytes are not a JPEG fails naming its file and record, in every variant (a Map's
// error alone says only "Map[4] at element 2"); a file of a folder, its path.
TEST_F(ImageNetPipelineTest, ABadImageIsNamedByItsFileAndRecord) {
  const std::string path = dir_.File("bad.tfrecord");
  {
    auto writer = TFRecordWriter::Open(path);
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (int i = 0; i < 3; ++i) {
      ExampleBuilder example;
      example.AddBytes("image/encoded", {i == 2 ? std::string("not a jpeg") : Jpeg(30, 40, 50, i)})
          .AddInt64("image/class/label", {i});
      ASSERT_TRUE((*writer)->Write(example.Serialize()).ok());
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  dir_.Write("badtree/a/broken.jpg", "not a jpeg either");
  const std::vector<std::pair<std::string, ImageNetPipelineOptions>> variants = {
      {"crop", {.files = path, .parallelism = 1, .batch_size = 1, .epochs = 1}},
      {"decode only",
       {.files = path, .parallelism = 1, .batch_size = 1, .decode_only = true, .epochs = 1}},
      {"snapshot",
       {.files = path, .parallelism = 1, .batch_size = 1, .snapshot = dir_.File("s"), .epochs = 1}},
  };
  for (const auto& [name, options] : variants) {
    SCOPED_TRACE(name);
    absl::StatusOr<Dataset> pipeline = ImageNetPipeline(options);
    ASSERT_TRUE(pipeline.ok()) << pipeline.status();
    auto it = pipeline->MakeIterator();
    absl::Status failed;
    for (int i = 0; i < 4 && failed.ok(); ++i) failed = it->GetNext().status();
    EXPECT_THAT(failed.message(), ::testing::HasSubstr(path + ": record 2: ")) << failed;
  }
  absl::StatusOr<Dataset> folder = ImageNetPipeline(
      {.images_dir = dir_.File("badtree"), .parallelism = 1, .decode_only = true, .epochs = 1});
  ASSERT_TRUE(folder.ok()) << folder.status();
  const absl::Status failed = folder->MakeIterator()->GetNext().status();
  EXPECT_THAT(failed.message(), ::testing::HasSubstr(dir_.File("badtree/a/broken.jpg") + ": "))
      << failed;
}

TEST_F(ImageNetPipelineTest, ASnapshotGoesWithoutCache) {
  absl::StatusOr<Dataset> pipeline = ImageNetPipeline(
      {.files = dir_.File("images.tfrecord"), .cache = true, .snapshot = dir_.File("snap")});
  EXPECT_TRUE(absl::IsInvalidArgument(pipeline.status())) << pipeline.status();
}

}  // namespace
}  // namespace sluice::train::recipes
