#ifndef SLUICE_TRAIN_RECIPES_FOLDER_IMAGES_H_
#define SLUICE_TRAIN_RECIPES_FOLDER_IMAGES_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "train/recipes/augmentation.h"
#include "train/recipes/labeled_images.h"

namespace sluice::train::recipes {

// A folder of class folders of JPEGs (data::ImageDatasetFromDirectory's layout), split into a
// training and a test (Keras' validation) subset.
struct FolderImagesOptions {
  std::string dir;
  // Every image is resized to image_size x image_size, RGB.
  int64_t image_size = 64;
  // The share of the images held out as the test set, in (0, 1).
  double validation_split = 0.2;
  // The training batches' size; the test set's batches are of 256.
  int64_t batch_size = 64;
  // kNone or kKeras (pad-crop is fused into TFRecord decodes only).
  Augmentation augmentation = Augmentation::kNone;
  // Train on the first `limit` training images only (-1: all), in whole batches.
  int64_t limit = -1;
  // Skip (and count, through `on_skipped`, from any thread) files that fail to read or decode,
  // instead of failing.
  bool skip_errors = false;
  std::function<void(const absl::Status&)> on_skipped;
  // The test set's skips, when set (else on_skipped's): a summary can tell what training lost.
  std::function<void(const absl::Status&)> on_skipped_test;
  // The split's, the shuffles' and the augmentation's seed.
  uint64_t seed = 0;
  // Print Keras' "Found N files belonging to K classes." lines to stderr.
  bool verbose = false;
};

// ImageDatasetFromDirectory's training and validation subsets of `dir`, scaled to [0, 1]; the
// training batches augmented as `augmentation` says. InvalidArgument for kPadCrop.
absl::StatusOr<LabeledImages> FolderImages(const FolderImagesOptions& options);

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_FOLDER_IMAGES_H_
