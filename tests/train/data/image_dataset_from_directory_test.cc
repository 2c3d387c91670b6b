#include "train/data/image_dataset_from_directory.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/decode_and_resize.h"
#include "ops/encode_jpeg.h"
#include "tests/dataset/test_util.h"
#include "tests/ops/image_test_util.h"
#include "tests/skipped_log.h"
#include "tests/temp_dir.h"

namespace sluice::train::data {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::MakeImage;
using ::sluice::testing::PhotoJpegs;
using ::sluice::testing::ScopedTempDir;
using ::sluice::testing::SkippedLog;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Options = ImageDirectoryOptions;

// A solid grey JPEG: it decodes to exactly `level` everywhere (a flat block has only a DC
// coefficient), so after any resize the pixels say which file, and so which class, it was.
std::string SolidJpeg(int level, int64_t h = 24, int64_t w = 32) {
  auto jpeg = EncodeJpeg(MakeImage(h, w, 3, [level](int64_t, int64_t, int64_t) { return level; }),
                         {.quality = 100});
  EXPECT_TRUE(jpeg.ok()) << jpeg.status();
  return *jpeg;
}

// cats/ has levels 10, 20, 30 (one in a nested folder), dogs/ 100 and 110; plus files that are
// not images and a hidden directory, which must be ignored.
class ImageDatasetFromDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.Write("cats/a.jpg", SolidJpeg(10));
    dir_.Write("cats/b.JPEG", SolidJpeg(20));
    dir_.Write("cats/nested/c.jpg", SolidJpeg(30));
    dir_.Write("cats/notes.txt", "not an image");
    dir_.Write("dogs/x.jpeg", SolidJpeg(100));
    dir_.Write("dogs/y.jpg", SolidJpeg(110));
    dir_.Write(".hidden/z.jpg", SolidJpeg(200));
    dir_.Write("top.jpg", SolidJpeg(250));  // not in a class folder: no label, so not used
  }
  std::string Path(const std::string& name) const { return dir_.File(name); }

  Options Quiet() const {
    Options o;
    o.verbose = false;
    o.image_height = 8;
    o.image_width = 6;
    return o;
  }

  ScopedTempDir dir_;
};

TEST_F(ImageDatasetFromDirectoryTest, IndexesClassFoldersInKerasOrder) {
  auto index = IndexImageDirectory(dir_.path(), Quiet());
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_THAT(index->class_names, ElementsAre("cats", "dogs"));
  EXPECT_THAT(index->files,
              ElementsAre(Path("cats/a.jpg"), Path("cats/b.JPEG"), Path("cats/nested/c.jpg"),
                          Path("dogs/x.jpeg"), Path("dogs/y.jpg")));
  EXPECT_THAT(index->labels, ElementsAre(0, 0, 0, 1, 1));
}

TEST_F(ImageDatasetFromDirectoryTest, ClassNamesChooseAndOrderTheClasses) {
  Options o = Quiet();
  o.class_names = {"dogs", "cats"};
  auto index = IndexImageDirectory(dir_.path(), o);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_THAT(index->labels, ElementsAre(0, 0, 1, 1, 1));
  EXPECT_EQ(index->files[0], Path("dogs/x.jpeg"));
  o.class_names = {"dogs"};
  index = IndexImageDirectory(dir_.path(), o);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->files.size(), 2u);
  o.class_names = {"dogs", "birds"};
  auto bad = IndexImageDirectory(dir_.path(), o);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("'birds'"));
  EXPECT_THAT(bad.status().message(), HasSubstr("cats, dogs"));
}

TEST_F(ImageDatasetFromDirectoryTest, WithoutLabelsEveryImageUnderTheDirectory) {
  Options o = Quiet();
  o.labels = Options::Labels::kNone;
  auto index = IndexImageDirectory(dir_.path(), o);
  ASSERT_TRUE(index.ok()) << index.status();
  // The top directory's files first, then each subdirectory's in path order (os.walk sorted).
  EXPECT_THAT(index->files, ElementsAre(Path("top.jpg"), Path(".hidden/z.jpg"), Path("cats/a.jpg"),
                                        Path("cats/b.JPEG"), Path("cats/nested/c.jpg"),
                                        Path("dogs/x.jpeg"), Path("dogs/y.jpg")));
  EXPECT_TRUE(index->labels.empty());
}

TEST_F(ImageDatasetFromDirectoryTest, ExplicitLabelsOnePerFileInSortedOrder) {
  Options o = Quiet();
  o.labels = Options::Labels::kExplicit;
  o.explicit_labels = {3, 1, 3, 1, 1, 3, 3};
  auto index = IndexImageDirectory(dir_.path(), o);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_THAT(index->class_names, ElementsAre("1", "3"));
  o.explicit_labels = {1, 2};
  EXPECT_THAT(IndexImageDirectory(dir_.path(), o).status().message(), HasSubstr("2 labels but"));
}

TEST_F(ImageDatasetFromDirectoryTest, ImagesAreResizedFloatsAndLabelsMatchTheirFolders) {
  Options o = Quiet();
  o.batch_size = std::nullopt;
  auto ds = ImageDatasetFromDirectory(dir_.path(), o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  auto elements = Collect(ds->dataset);
  ASSERT_TRUE(elements.ok()) << elements.status();
  ASSERT_EQ(elements->size(), 5u);
  std::multiset<int> levels;
  for (const Element& e : *elements) {
    ASSERT_EQ(e.size(), 2u);
    ASSERT_EQ(e[0].dtype(), DType::kFloat32);
    ASSERT_EQ(e[0].shape(), (Shape{8, 6, 3}));
    ASSERT_EQ(e[1].dtype(), DType::kInt32);
    ASSERT_EQ(e[1].shape(), Shape{});
    const float level = e[0].data<float>()[0];
    for (float v : e[0].flat<float>()) ASSERT_EQ(v, level);  // unscaled [0, 255], uniform
    levels.insert(static_cast<int>(level));
    EXPECT_EQ(e[1].scalar<int32_t>(), level < 50 ? 0 : 1) << "level " << level;
  }
  EXPECT_EQ(levels, (std::multiset<int>{10, 20, 30, 100, 110}));
}

TEST_F(ImageDatasetFromDirectoryTest, LabelModes) {
  Options o = Quiet();
  o.batch_size = 5;
  o.shuffle = false;
  o.label_mode = Options::LabelMode::kCategorical;
  auto ds = ImageDatasetFromDirectory(dir_.path(), o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  auto batches = Collect(ds->dataset);
  ASSERT_TRUE(batches.ok()) << batches.status();
  ASSERT_EQ(batches->size(), 1u);
  const Tensor& one_hot = (*batches)[0][1];
  ASSERT_EQ(one_hot.shape(), (Shape{5, 2}));
  EXPECT_THAT(std::vector<float>(one_hot.flat<float>().begin(), one_hot.flat<float>().end()),
              ElementsAre(1, 0, 1, 0, 1, 0, 0, 1, 0, 1));

  o.label_mode = Options::LabelMode::kBinary;
  ds = ImageDatasetFromDirectory(dir_.path(), o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  batches = Collect(ds->dataset);
  ASSERT_TRUE(batches.ok());
  const Tensor& binary = (*batches)[0][1];
  ASSERT_EQ(binary.shape(), (Shape{5, 1}));
  EXPECT_THAT(std::vector<float>(binary.flat<float>().begin(), binary.flat<float>().end()),
              ElementsAre(0, 0, 0, 1, 1));

  o.label_mode = Options::LabelMode::kNone;
  ds = ImageDatasetFromDirectory(dir_.path(), o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  batches = Collect(ds->dataset);
  ASSERT_TRUE(batches.ok());
  EXPECT_EQ((*batches)[0].size(), 1u);
  EXPECT_EQ((*batches)[0][0].shape(), (Shape{5, 8, 6, 3}));

  o.label_mode = Options::LabelMode::kBinary;
  o.class_names = {"cats"};
  EXPECT_THAT(ImageDatasetFromDirectory(dir_.path(), o).status().message(),
              HasSubstr("exactly 2 classes"));
}

TEST_F(ImageDatasetFromDirectoryTest, GrayscaleHasOneChannel) {
  Options o = Quiet();
  o.color_mode = Options::ColorMode::kGrayscale;
  o.batch_size = 2;
  auto ds = ImageDatasetFromDirectory(dir_.path(), o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  auto batches = Collect(ds->dataset);
  ASSERT_TRUE(batches.ok()) << batches.status();
  ASSERT_EQ(batches->size(), 3u);  // 2 + 2 + 1: the remainder is kept, as in Keras
  EXPECT_EQ((*batches)[0][0].shape(), (Shape{2, 8, 6, 1}));
  EXPECT_EQ((*batches)[2][0].shape(), (Shape{1, 8, 6, 1}));
}

TEST_F(ImageDatasetFromDirectoryTest, SplitsAreDisjointAndCoverEveryFile) {
  Options o = Quiet();
  o.seed = 1234;
  o.validation_split = 0.4;  // int(0.4 * 5) = 2 validation files
  o.subset = Options::Subset::kTraining;
  auto training = ImageDatasetFromDirectory(dir_.path(), o);
  ASSERT_TRUE(training.ok()) << training.status();
  o.subset = Options::Subset::kValidation;
  auto validation = ImageDatasetFromDirectory(dir_.path(), o);
  ASSERT_TRUE(validation.ok()) << validation.status();
  EXPECT_EQ(training->files.size(), 3u);
  EXPECT_EQ(validation->files.size(), 2u);
  std::set<std::string> all(training->files.begin(), training->files.end());
  all.insert(validation->files.begin(), validation->files.end());
  EXPECT_EQ(all.size(), 5u);
  // The same seed shuffles the same way: another call gives the same subsets.
  auto again = ImageDatasetFromDirectory(dir_.path(), o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->files, validation->files);
  // Every training image is one of the training files' (levels are unique per file).
  auto batches = Collect(training->dataset);
  ASSERT_TRUE(batches.ok()) << batches.status();
  ASSERT_EQ(batches->size(), 1u);
  EXPECT_EQ((*batches)[0][0].dim(0), 3);
}

TEST_F(ImageDatasetFromDirectoryTest, BothSubsetsFromOneCallAreTheTwoCallsSubsets) {
  Options o = Quiet();
  o.seed = 1234;
  o.validation_split = 0.4;
  auto both = ImageDatasetsFromDirectory(dir_.path(), o);
  ASSERT_TRUE(both.ok()) << both.status();
  o.subset = Options::Subset::kTraining;
  auto training = ImageDatasetFromDirectory(dir_.path(), o);
  o.subset = Options::Subset::kValidation;
  auto validation = ImageDatasetFromDirectory(dir_.path(), o);
  ASSERT_TRUE(training.ok() && validation.ok());
  EXPECT_EQ(both->first.files, training->files);
  EXPECT_EQ(both->second.files, validation->files);
  EXPECT_EQ(both->second.class_names, validation->class_names);
  auto batches = Collect(both->second.dataset);
  ASSERT_TRUE(batches.ok()) << batches.status();
  ASSERT_EQ(batches->size(), 1u);
  EXPECT_EQ((*batches)[0][0].dim(0), 2);
  // It makes both subsets itself, from a split.
  EXPECT_THAT(ImageDatasetsFromDirectory(dir_.path(), o).status().message(),
              HasSubstr("leave subset unset"));
  o.subset = Options::Subset::kAll;
  o.validation_split = 0;
  EXPECT_THAT(ImageDatasetsFromDirectory(dir_.path(), o).status().message(),
              HasSubstr("needs a validation_split"));
}

TEST_F(ImageDatasetFromDirectoryTest, ShuffleIsSeededAndReshufflesEachEpoch) {
  Options o = Quiet();
  o.batch_size = std::nullopt;
  o.seed = 7;
  auto ds = ImageDatasetFromDirectory(dir_.path(), o);
  ASSERT_TRUE(ds.ok());
  auto order = [](const Dataset& d) {
    std::vector<int> levels;
    auto elements = Collect(d);
    EXPECT_TRUE(elements.ok());
    for (const Element& e : *elements) levels.push_back(static_cast<int>(e[0].data<float>()[0]));
    return levels;
  };
  auto same = ImageDatasetFromDirectory(dir_.path(), o);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(order(ds->dataset), order(same->dataset));
  // Four epochs of one dataset: each a permutation of the five files, not all in one order
  // (with a fixed seed this is deterministic: it fails only if reshuffling is broken).
  auto epochs = Collect(ds->dataset.Repeat(4));
  ASSERT_TRUE(epochs.ok());
  std::set<std::vector<int>> orders;
  for (int epoch = 0; epoch < 4; ++epoch) {
    std::vector<int> levels;
    for (int i = 0; i < 5; ++i) {
      levels.push_back(static_cast<int>((*epochs)[epoch * 5 + i][0].data<float>()[0]));
    }
    std::vector<int> sorted = levels;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_THAT(sorted, ElementsAre(10, 20, 30, 100, 110));
    orders.insert(levels);
  }
  EXPECT_GT(orders.size(), 1u);
  o.shuffle = false;
  auto sorted = ImageDatasetFromDirectory(dir_.path(), o);
  ASSERT_TRUE(sorted.ok());
  EXPECT_THAT(order(sorted->dataset), ElementsAre(10, 20, 30, 100, 110));
}

TEST_F(ImageDatasetFromDirectoryTest, PhotosMatchDecodeAndResize) {
  ScopedTempDir photos;
  const auto& jpegs = PhotoJpegs();
  ASSERT_EQ(jpegs.size(), 3u);
  for (size_t i = 0; i < jpegs.size(); ++i) {
    photos.Write("class" + std::to_string(i) + "/photo.jpg", jpegs[i]);
  }
  for (bool crop : {false, true}) {
    Options o = Quiet();
    o.shuffle = false;
    o.batch_size = std::nullopt;
    o.image_height = 64;
    o.image_width = 96;
    o.crop_to_aspect_ratio = crop;
    auto ds = ImageDatasetFromDirectory(photos.path(), o);
    ASSERT_TRUE(ds.ok()) << ds.status();
    auto elements = Collect(ds->dataset);
    ASSERT_TRUE(elements.ok()) << elements.status();
    ASSERT_EQ(elements->size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      // float32, unrounded (Keras' values); the rounded uint8 decode within half a level.
      auto expected = DecodeAndResize(jpegs[i], 64, 96, {.crop_to_aspect_ratio = crop},
                                      {.round_to_uint8 = false});
      auto rounded = DecodeAndResize(jpegs[i], 64, 96, {.crop_to_aspect_ratio = crop});
      ASSERT_TRUE(expected.ok() && rounded.ok()) << expected.status();
      const Tensor& got = (*elements)[i][0];
      ASSERT_EQ(got.shape(), (Shape{64, 96, 3}));
      ASSERT_EQ(got.dtype(), DType::kFloat32);
      bool fractional = false;
      for (int64_t k = 0; k < got.num_elements(); ++k) {
        const float v = got.data<float>()[k];
        ASSERT_EQ(v, expected->data<float>()[k]) << "photo " << i << " value " << k;
        ASSERT_LE(std::abs(v - rounded->data<uint8_t>()[k]), 0.5f + 1e-4f)
            << "photo " << i << " value " << k << " crop " << crop;
        fractional |= v != std::round(v);
      }
      EXPECT_TRUE(fractional) << "photo " << i << ": no value between two levels";
      EXPECT_EQ((*elements)[i][1].scalar<int32_t>(), static_cast<int32_t>(i));
    }
  }
}

TEST_F(ImageDatasetFromDirectoryTest, ABadFileIsNamedOrSkippedAndCounted) {
  dir_.Write("dogs/broken.jpg", SolidJpeg(120).substr(0, 100));
  dir_.Write("dogs/picture.png", "\x89PNG\r\n\x1a\n not really");
  Options o = Quiet();
  o.shuffle = false;
  o.batch_size = std::nullopt;
  auto ds = ImageDatasetFromDirectory(dir_.path(), o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  auto failed = Collect(ds->dataset);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(), HasSubstr(Path("dogs/broken.jpg")));

  SkippedLog log;
  o.skip_errors = true;
  o.on_skipped = log.Callback();
  ds = ImageDatasetFromDirectory(dir_.path(), o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  auto elements = Collect(ds->dataset);
  ASSERT_TRUE(elements.ok()) << elements.status();
  EXPECT_EQ(elements->size(), 5u);
  std::vector<std::string> skipped = log.messages();
  ASSERT_EQ(skipped.size(), 2u);
  std::sort(skipped.begin(), skipped.end());
  EXPECT_THAT(skipped[0], HasSubstr(Path("dogs/broken.jpg")));
  EXPECT_THAT(skipped[1], HasSubstr(Path("dogs/picture.png")));
}

TEST_F(ImageDatasetFromDirectoryTest, Errors) {
  Options o = Quiet();
  EXPECT_EQ(ImageDatasetFromDirectory(Path("missing"), o).status().code(),
            absl::StatusCode::kNotFound);
  dir_.Write("notes.txt", "not a folder");
  const absl::Status file = ImageDatasetFromDirectory(Path("notes.txt"), o).status();
  EXPECT_EQ(file.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(file.message(), HasSubstr("notes.txt: not a directory"));
  ScopedTempDir empty;
  EXPECT_THAT(ImageDatasetFromDirectory(empty.path(), o).status().message(),
              HasSubstr("no image files"));
  o.validation_split = 0.2;
  EXPECT_THAT(ImageDatasetFromDirectory(dir_.path(), o).status().message(),
              HasSubstr("validation_split and subset go together"));
  o.subset = Options::Subset::kTraining;
  EXPECT_THAT(ImageDatasetFromDirectory(dir_.path(), o).status().message(),
              HasSubstr("needs a seed"));
  o.seed = 1;
  o.validation_split = 0.1;  // int(0.5) = 0 validation files: fine for training
  EXPECT_TRUE(ImageDatasetFromDirectory(dir_.path(), o).ok());
  o.subset = Options::Subset::kValidation;
  EXPECT_THAT(ImageDatasetFromDirectory(dir_.path(), o).status().message(),
              HasSubstr("subset empty"));
  o = Quiet();
  o.batch_size = 0;
  EXPECT_EQ(ImageDatasetFromDirectory(dir_.path(), o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ImageDatasetFromDirectoryTest, SymlinkedDirectoriesOnlyWithFollowLinksAndNeverInALoop) {
  std::filesystem::create_directory_symlink(Path("dogs"), Path("cats/more"));
  std::filesystem::create_directory_symlink(Path("cats"), Path("cats/nested/loop"));
  Options o = Quiet();
  auto index = IndexImageDirectory(dir_.path(), o);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->files.size(), 5u);
  o.follow_links = true;
  index = IndexImageDirectory(dir_.path(), o);
  ASSERT_TRUE(index.ok()) << index.status();
  // cats/more (dogs' two files) is walked once as cats' and once as dogs' own; the loop back to
  // cats/ is not entered again.
  EXPECT_EQ(index->files.size(), 7u);
}

}  // namespace
}  // namespace sluice::train::data
