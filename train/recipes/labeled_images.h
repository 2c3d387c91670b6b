#ifndef SLUICE_TRAIN_RECIPES_LABELED_IMAGES_H_
#define SLUICE_TRAIN_RECIPES_LABELED_IMAGES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dataset/dataset.h"

namespace sluice::train::recipes {

// An image classification set as Trainer::Fit and Evaluate take it: batches {images float32
// [B, H, W, C] in [0, 1], labels [B]} for training and for testing, and what a training run
// needs to know of them. TFRecordImages and FolderImages make one.
struct LabeledImages {
  Dataset train;
  Dataset test;
  // The training records one epoch reads (after any limit): the schedule's length and the
  // progress bar's total.
  int64_t train_records = 0;
  int64_t classes = 0;
  std::vector<std::string> class_names;  // one per class, saved with a model (SaveModel)
  std::string test_source;               // what the test set was read from, for errors
};

// Where the test set's skipped records go: the options' on_skipped_test when set, else their
// on_skipped (TFRecordImagesOptions, FolderImagesOptions).
template <typename Options>
std::function<void(const absl::Status&)> TestSkips(const Options& options) {
  return options.on_skipped_test ? options.on_skipped_test : options.on_skipped;
}

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_LABELED_IMAGES_H_
