#include "train/data/image_dataset.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataset/iterator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/example_builder.h"
#include "io/example_parser.h"
#include "io/feature_spec.h"
#include "io/tfrecord_writer.h"
#include "ops/decode_jpeg.h"
#include "tests/skipped_log.h"

namespace sluice::train::data {
namespace {

using ::sluice::testing::SkippedLog;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

std::vector<Element> ReadAll(const Dataset& dataset) {
  std::vector<Element> out;
  auto it = dataset.MakeIterator();
  while (true) {
    auto next = it->GetNext();
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok() || !next->has_value()) break;
    out.push_back(**next);
  }
  return out;
}

class ImageDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("image_dataset_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A raw-format file of `count` 4x6 grayscale images; pixel (y, x) of image i is i*24 + y*6 + x.
  std::string WriteRaw(int count, const std::string& name = "raw.tfrecord") {
    const std::string path = (dir_ / name).string();
    auto writer = TFRecordWriter::Open(path);
    EXPECT_TRUE(writer.ok());
    for (int i = 0; i < count; ++i) {
      std::string pixels(24, '\0');
      for (int p = 0; p < 24; ++p) pixels[p] = static_cast<char>(i * 24 + p);
      ExampleBuilder example;
      example.AddBytes("image/encoded", {pixels})
          .AddInt64("image/class/label", {i % 10})
          .AddInt64("image/height", {4})
          .AddInt64("image/width", {6})
          .AddBytes("image/format", {"raw"});
      EXPECT_TRUE((*writer)->Write(example.Serialize()).ok());
    }
    EXPECT_TRUE((*writer)->Close().ok());
    return path;
  }

  // `count` raw 4x6 images labelled with their index, except that record `short_one` declares
  // 4x6 but holds 5 bytes. `payload`: the size of record 0's data.
  static void WriteWithAShortImage(const std::string& path, int count, int short_one,
                                   size_t* payload = nullptr) {
    auto writer = TFRecordWriter::Open(path);
    ASSERT_TRUE(writer.ok());
    for (int i = 0; i < count; ++i) {
      ExampleBuilder example;
      example.AddBytes("image/encoded", {std::string(i == short_one ? 5 : 24, 'x')})
          .AddInt64("image/class/label", {i})
          .AddInt64("image/height", {4})
          .AddInt64("image/width", {6})
          .AddBytes("image/format", {"raw"});
      if (i == 0 && payload != nullptr) *payload = example.Serialize().size();
      ASSERT_TRUE((*writer)->Write(example.Serialize()).ok());
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }

  std::filesystem::path dir_;
};

TEST_F(ImageDatasetTest, DecodesTheIndependentFixtureJpegsToUnitRange) {
  const std::string file = std::string(SLUICE_TEST_DATA) + "/images3.tfrecord";
  auto dataset = MakeImageDataset({.files = file, .batch_size = 1, .channels = 3});
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  std::vector<Element> batches = ReadAll(*dataset);
  ASSERT_EQ(batches.size(), 3u);
  const int64_t labels[] = {1, 4, 7};  // from images3.expected.json
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(batches[i][0].dtype(), DType::kFloat32);
    ASSERT_EQ(batches[i][0].rank(), 4);
    EXPECT_EQ(batches[i][0].shape()[3], 3);
    EXPECT_EQ(batches[i][1].data<int64_t>()[0], labels[i]);
  }
  // Each image is its JPEG's decode divided by 255.
  std::vector<Element> records = ReadAll(Dataset::TFRecord(file));
  ASSERT_EQ(records.size(), 3u);
  FeatureSpec spec;
  spec.features.push_back({"image/encoded", FixedLenFeature{DType::kBytes, {}}});
  for (int i = 0; i < 3; ++i) {
    auto parsed = ParseExample(records[i][0].scalar<std::string>(), spec);
    ASSERT_TRUE(parsed.ok());
    auto decoded = DecodeJpeg((*parsed)[0].scalar<std::string>(), {.channels = 3});
    ASSERT_TRUE(decoded.ok());
    ASSERT_EQ(batches[i][0].num_elements(), decoded->num_elements());
    for (int64_t p = 0; p < decoded->num_elements(); p += 97) {
      ASSERT_EQ(batches[i][0].data<float>()[p], decoded->data<uint8_t>()[p] / 255.0f) << p;
    }
  }
}

TEST_F(ImageDatasetTest, RawImagesBatchInOrderWithExactPixels) {
  const std::string file = WriteRaw(5);
  auto dataset = MakeImageDataset({.files = file, .batch_size = 2, .channels = 1});
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  std::vector<Element> batches = ReadAll(*dataset);
  ASSERT_EQ(batches.size(), 3u);  // 2 + 2 + 1
  EXPECT_EQ(batches[0][0].shape(), (Shape{2, 4, 6, 1}));
  EXPECT_EQ(batches[2][0].shape(), (Shape{1, 4, 6, 1}));
  for (int b = 0; b < 3; ++b) {
    const Tensor& images = batches[b][0];
    for (int64_t row = 0; row < images.shape()[0]; ++row) {
      const int i = b * 2 + static_cast<int>(row);
      EXPECT_EQ(batches[b][1].data<int64_t>()[row], i);
      for (int p = 0; p < 24; ++p) {
        EXPECT_EQ(images.data<float>()[row * 24 + p], static_cast<float>(i * 24 + p) / 255.0f);
      }
    }
  }
}

TEST_F(ImageDatasetTest, LimitAndDropRemainder) {
  const std::string file = WriteRaw(9);
  auto dataset =
      MakeImageDataset({.files = file, .batch_size = 2, .limit = 7, .drop_remainder = true});
  ASSERT_TRUE(dataset.ok());
  EXPECT_EQ(ReadAll(*dataset).size(), 3u);  // 7 records, 3 full batches
}

TEST_F(ImageDatasetTest, AugmentationIsASeededShiftOrFlipOfTheImage) {
  const std::string file = WriteRaw(8);
  ImageDatasetOptions options{.files = file, .batch_size = 8, .augment = true, .pad_crop = 2};
  options.seed = 42;
  auto a = MakeImageDataset(options);
  auto b = MakeImageDataset(options);
  ASSERT_TRUE(a.ok() && b.ok());
  Element first = ReadAll(*a)[0], again = ReadAll(*b)[0];
  EXPECT_TRUE(first[0].Equals(again[0]));  // same seed, same pixels
  // Each augmented pixel is 0 (padding) or one of the image's own pixels.
  int changed = 0;
  for (int i = 0; i < 8; ++i) {
    for (int p = 0; p < 24; ++p) {
      const float v = first[0].data<float>()[i * 24 + p] * 255.0f;
      const int pixel = static_cast<int>(v + 0.5f);
      EXPECT_TRUE(pixel == 0 || (pixel >= i * 24 && pixel < i * 24 + 24)) << i << " " << p;
      if (pixel != i * 24 + p) ++changed;
    }
  }
  EXPECT_GT(changed, 0);
  options.seed = 43;
  auto c = MakeImageDataset(options);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(ReadAll(*c)[0][0].Equals(first[0]));
}

TEST_F(ImageDatasetTest, ABadRecordIsNamedAndCanBeSkipped) {
  const std::string path = (dir_ / "bad.tfrecord").string();
  ASSERT_NO_FATAL_FAILURE(WriteWithAShortImage(path, 3, 1));
  auto strict = MakeImageDataset({.files = path, .batch_size = 1, .num_parallel_calls = 1});
  ASSERT_TRUE(strict.ok());
  auto it = strict->MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  auto second = it->GetNext();
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(), HasSubstr(path + ": record 1: raw image of 5 bytes"));

  auto lenient = MakeImageDataset({.files = path, .batch_size = 1, .skip_errors = true});
  ASSERT_TRUE(lenient.ok());
  std::vector<Element> kept = ReadAll(*lenient);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0][1].data<int64_t>()[0], 0);
  EXPECT_EQ(kept[1][1].data<int64_t>()[0], 2);
}

// A record whose CRC fails is skipped by the reader, which reads on: IgnoreErrors alone would
// lose the rest of the file (the reader's error ends it). A later bad record is still named by
// its index in the file.
TEST_F(ImageDatasetTest, ACorruptRecordIsSkippedAndTheFileReadsOn) {
  const std::string path = (dir_ / "corrupt.tfrecord").string();
  size_t payload = 0;
  ASSERT_NO_FATAL_FAILURE(WriteWithAShortImage(path, 6, 4, &payload));
  const size_t record1 = 12 + payload + 4;  // header, data, CRC
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(record1 + 12 + 3));
    f.put('\x7f');  // a byte of record 1's data: its CRC fails
  }
  SkippedLog skipped;
  auto lenient = MakeImageDataset({.files = path,
                                   .batch_size = 1,
                                   .skip_errors = true,
                                   .on_skipped = skipped.Callback(),
                                   .num_parallel_calls = 1});
  ASSERT_TRUE(lenient.ok());
  std::vector<int64_t> labels;
  for (const Element& e : ReadAll(*lenient)) labels.push_back(e[1].data<int64_t>()[0]);
  EXPECT_THAT(labels, ElementsAre(0, 2, 3, 5));
  EXPECT_THAT(skipped.messages(),
              UnorderedElementsAre(HasSubstr(absl::StrCat(path, ": record 1 at offset ", record1,
                                                          ": data CRC mismatch")),
                                   HasSubstr(path + ": record 4: raw image of 5 bytes")));
}

TEST_F(ImageDatasetTest, RejectsBadOptions) {
  EXPECT_FALSE(MakeImageDataset({.files = "x", .channels = 2}).ok());
  EXPECT_FALSE(MakeImageDataset({.files = "x", .batch_size = 0}).ok());
}

}  // namespace
}  // namespace sluice::train::data
