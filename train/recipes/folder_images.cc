#include "train/recipes/folder_images.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "ops/rescaling.h"
#include "train/data/image_dataset_from_directory.h"

namespace sluice::train::recipes {
namespace {

// Keras lists .png, .bmp and .gif as images too, and so does ImageDatasetFromDirectory; sluice
// decodes JPEG only, so without skip_errors such a file would fail the run when an epoch met it,
// after all the training before. Refused here, before any training, with what to do.
absl::Status CheckAllJpeg(const std::string& dir, const std::vector<std::string>& train,
                          const std::vector<std::string>& test) {
  int64_t others = 0;
  const std::string* first = nullptr;
  for (const std::vector<std::string>* files : {&train, &test}) {
    for (const std::string& file : *files) {
      const std::string lower = absl::AsciiStrToLower(file);
      if (absl::EndsWith(lower, ".jpg") || absl::EndsWith(lower, ".jpeg")) continue;
      if (first == nullptr) first = &file;
      ++others;
    }
  }
  if (others == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      dir, ": ", others, " of the images ", others == 1 ? "is" : "are", " not JPEG (the first: ",
      *first, "); sluice decodes JPEG only: convert them to JPEG and move the originals out of ",
      dir, ", or pass --skip-errors to skip them"));
}

}  // namespace

absl::StatusOr<LabeledImages> FolderImages(const FolderImagesOptions& options) {
  if (options.augmentation == Augmentation::kPadCrop) {
    return absl::InvalidArgumentError(
        "pad-crop augmentation is fused into TFRecord decodes: a folder of images takes keras");
  }
  using DirectoryOptions = data::ImageDirectoryOptions;
  DirectoryOptions directory;
  directory.image_height = directory.image_width = options.image_size;
  directory.seed = options.seed;
  directory.validation_split = options.validation_split;
  directory.subset = DirectoryOptions::Subset::kTraining;
  directory.batch_size = options.batch_size;
  directory.verbose = options.verbose;
  directory.skip_errors = options.skip_errors;
  directory.on_skipped = options.on_skipped;
  SLUICE_ASSIGN_OR_RETURN(data::ImageDirectoryDataset train_set,
                          data::ImageDatasetFromDirectory(options.dir, directory));
  if (train_set.class_names.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.dir, ": ", train_set.class_names.size(), " class folder (",
                     absl::StrJoin(train_set.class_names, ", "),
                     "); a classifier needs at least 2: one folder of images per class"));
  }
  directory.subset = DirectoryOptions::Subset::kValidation;
  directory.batch_size = 256;
  directory.on_skipped = TestSkips(options);
  SLUICE_ASSIGN_OR_RETURN(data::ImageDirectoryDataset test_set,
                          data::ImageDatasetFromDirectory(options.dir, directory));
  if (!options.skip_errors) {
    SLUICE_RETURN_IF_ERROR(CheckAllJpeg(options.dir, train_set.files, test_set.files));
  }
  constexpr float kScale = 1.0f / 255;  // ImageDatasetFromDirectory's pixels are in [0, 255]
  SLUICE_ASSIGN_OR_RETURN(
      Dataset train,
      KerasAugmentation(train_set.dataset, {.augment = options.augmentation == Augmentation::kKeras,
                                            .rescale = kScale}));
  const Rescaling rescale(kScale);
  Dataset test = test_set.dataset.Map([rescale](Element e) -> absl::StatusOr<Element> {
    SLUICE_ASSIGN_OR_RETURN(e[0], rescale.Apply(e[0]));
    return e;
  });
  int64_t train_records = static_cast<int64_t>(train_set.files.size());
  if (options.limit >= 0) {
    train_records = std::min(train_records, options.limit);
    train = train.Take((options.limit + options.batch_size - 1) / options.batch_size);
  }
  return LabeledImages{.train = std::move(train),
                       .test = std::move(test),
                       .train_records = train_records,
                       .classes = static_cast<int64_t>(train_set.class_names.size()),
                       .class_names = train_set.class_names,
                       .test_source = absl::StrCat(options.dir, " (validation subset)")};
}

}  // namespace sluice::train::recipes
