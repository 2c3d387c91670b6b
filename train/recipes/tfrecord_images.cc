#include "train/recipes/tfrecord_images.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "io/compression.h"
#include "io/glob.h"
#include "io/proto/example.pb.h"
#include "io/tfrecord_reader.h"
#include "train/data/image_dataset.h"
#include "train/recipes/count_records.h"

namespace sluice::train::recipes {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kClasses = 10;

// The size every image must share: what the first training record declares.
struct FirstRecord {
  int64_t height = 0, width = 0;  // 0: no check
  std::string file;
  // What --data trains on, and where other images go: said when a record's size is not this.
  std::string Hint() const {
    return absl::StrCat(" (record 0 of ", file,
                        "'s): --data trains on images of one size, as `sluice convert "
                        "fashion-mnist` writes them; for a folder of class folders of JPEGs of "
                        "any size, train on the folder itself: --images ROOT --image-size N");
  }
};

// The height and width the first record of `pattern`'s first file declares (image/height and
// image/width, which `sluice convert` writes), so that a photo of another size is named by its
// record instead of failing its batch. No size when there is no readable first record or it
// declares none (any writer's records are then taken as they come).
FirstRecord FirstRecordSize(const std::string& pattern) {
  absl::StatusOr<std::vector<std::string>> files = Glob(pattern);
  if (!files.ok() || files->empty()) return {};
  // Not skip_corrupt: a bad first record would have the reader scan on; the pipeline names it.
  absl::StatusOr<std::unique_ptr<TFRecordReader>> reader =
      TFRecordReader::Open(files->front(), {.compression = GuessCompression(files->front())});
  std::string record;
  if (!reader.ok() || !(*reader)->ReadRecord(&record).value_or(false)) return {};
  proto::Example example;
  if (!example.ParseFromString(record)) return {};
  const auto size = [&](const std::string& key) -> int64_t {
    const auto& features = example.features().feature();
    const auto found = features.find(key);
    if (found == features.end() || found->second.int64_list().value_size() != 1) return 0;
    return found->second.int64_list().value(0);
  };
  const int64_t height = size("image/height"), width = size("image/width");
  if (height <= 0 || width <= 0) return {};
  return {height, width, files->front()};
}

// `sluice convert` writes the class names beside the records: numbers when there are none. Other
// than 10 is `sluice convert images`' output of another data set, which these fixed 28 x 28
// grayscale, 10-class pipelines cannot train on (its photos' sizes differ, and so would the
// batch's shapes).
absl::StatusOr<std::vector<std::string>> ClassNames(const std::string& dir) {
  std::vector<std::string> names;
  const fs::path path = fs::path(dir) / "labels.txt";
  std::ifstream labels(path);
  for (std::string line; std::getline(labels, line);) names.push_back(line);
  while (!names.empty() && names.back().empty()) names.pop_back();  // an editor's last newline
  if (names.size() == kClasses) return names;
  if (!names.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        path.string(), " names ", names.size(),
        " classes, but --data trains on Fashion-MNIST's shards (10 classes of 28 x 28 grayscale "
        "images, as `sluice convert fashion-mnist` writes them); for a folder of class folders "
        "of JPEGs, train on the folder itself: --images ROOT --image-size N"));
  }
  for (int64_t i = 0; i < kClasses; ++i) names.push_back(absl::StrCat(i));
  return names;
}

}  // namespace

absl::StatusOr<LabeledImages> TFRecordImages(const TFRecordImagesOptions& options) {
  const std::string train_files = (fs::path(options.dir) / "train-*.tfrecord").string();
  const std::string test_files = (fs::path(options.dir) / "test-*.tfrecord").string();
  std::error_code error;
  if (fs::exists(options.dir, error) && !fs::is_directory(options.dir, error)) {
    return absl::FailedPreconditionError(
        absl::StrCat(options.dir,
                     " is not a folder: give the folder that `sluice convert "
                     "fashion-mnist --out` wrote (train-*.tfrecord, test-*.tfrecord)"));
  }
  // `sluice convert images` writes train shards alone: the pipeline's Glob would only say that
  // no test file matches.
  const absl::StatusOr<std::vector<std::string>> tests = Glob(test_files);
  const absl::StatusOr<std::vector<std::string>> trains = Glob(train_files);
  // (Glob: NotFound when nothing matches.)
  const bool no_tests = absl::IsNotFound(tests.status()) || (tests.ok() && tests->empty());
  if (no_tests && trains.ok() && !trains->empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no test records in ", test_files,
        ": --data trains on `sluice convert fashion-mnist`'s train and test shards; for the "
        "images `sluice convert images` converted, train on the folder of class folders it read: "
        "--images ROOT --image-size N (which holds out --validation-split as the test set)"));
  }
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> class_names, ClassNames(options.dir));
  SLUICE_ASSIGN_OR_RETURN(
      const int64_t train_records,
      CountRecords(train_files, {.limit = options.limit, .skip_errors = options.skip_errors}));
  if (train_records == 0) {
    return absl::NotFoundError(absl::StrCat("no training records in ", train_files,
                                            " (make them with `sluice convert fashion-mnist`)"));
  }
  const FirstRecord first = FirstRecordSize(train_files);
  const std::string size_hint = first.Hint();
  SLUICE_ASSIGN_OR_RETURN(Dataset train, data::MakeImageDataset({.files = train_files,
                                                                 .batch_size = options.batch_size,
                                                                 .channels = 1,
                                                                 .shuffle_buffer = 10000,
                                                                 .augment = options.augmentation ==
                                                                            Augmentation::kPadCrop,
                                                                 .height = first.height,
                                                                 .width = first.width,
                                                                 .size_hint = size_hint,
                                                                 .limit = options.limit,
                                                                 .skip_errors = options.skip_errors,
                                                                 .on_skipped = options.on_skipped,
                                                                 .seed = options.seed}));
  if (options.augmentation == Augmentation::kKeras) {
    SLUICE_ASSIGN_OR_RETURN(train, KerasAugmentation(std::move(train)));
  }
  SLUICE_ASSIGN_OR_RETURN(Dataset test, data::MakeImageDataset({.files = test_files,
                                                                .batch_size = 256,
                                                                .channels = 1,
                                                                .height = first.height,
                                                                .width = first.width,
                                                                .size_hint = size_hint,
                                                                .skip_errors = options.skip_errors,
                                                                .on_skipped = TestSkips(options),
                                                                .seed = options.seed}));
  return LabeledImages{.train = std::move(train),
                       .test = std::move(test),
                       .train_records = train_records,
                       .classes = kClasses,
                       .class_names = std::move(class_names),
                       .test_source = test_files};
}

}  // namespace sluice::train::recipes
