#ifndef SLUICE_TRAIN_RECIPES_TFRECORD_IMAGES_H_
#define SLUICE_TRAIN_RECIPES_TFRECORD_IMAGES_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "train/recipes/augmentation.h"
#include "train/recipes/labeled_images.h"

namespace sluice::train::recipes {

// The grayscale images of 10 classes that `sluice convert fashion-mnist` writes: `dir` holds
// train-*.tfrecord, test-*.tfrecord and labels.txt (one class name a line).
struct TFRecordImagesOptions {
  std::string dir;
  // The training batches' size; the test set's batches are of 256.
  int64_t batch_size = 64;
  // kPadCrop is fused into the decode; kKeras runs on each batch (KerasAugmentation).
  Augmentation augmentation = Augmentation::kNone;
  // Train on the first `limit` training records only (-1: all).
  int64_t limit = -1;
  // Skip (and count, through `on_skipped`, from any thread) records that fail to read, parse or
  // decode, instead of failing.
  bool skip_errors = false;
  std::function<void(const absl::Status&)> on_skipped;
  // The test set's skips, when set (else on_skipped's): a summary can tell what training lost.
  std::function<void(const absl::Status&)> on_skipped_test;
  // The shuffle's and the augmentation's seed.
  uint64_t seed = 0;
};

// data::MakeImageDataset over dir/train-*.tfrecord (shuffled with a buffer of 10,000, augmented)
// and dir/test-*.tfrecord, their records counted (CountRecords) and the class names read from
// labels.txt ("0" to "9" when it is missing; FailedPrecondition when it names other than 10
// classes). Every image must have the size the first training record declares: one of another
// size fails naming its record (or is skipped with skip_errors). NotFound when there are no
// training records.
absl::StatusOr<LabeledImages> TFRecordImages(const TFRecordImagesOptions& options);

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_TFRECORD_IMAGES_H_
