#ifndef SLUICE_TRAIN_DATA_IMAGE_DATASET_FROM_DIRECTORY_H_
#define SLUICE_TRAIN_DATA_IMAGE_DATASET_FROM_DIRECTORY_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataset/dataset.h"
#include "dataset/options.h"
#include "ops/resize.h"

namespace sluice::train::data {

// keras.utils.image_dataset_from_directory's arguments, with its defaults and meanings.
struct ImageDirectoryOptions {
  enum class Labels {
    kInferred,  // one class per subdirectory of the directory, in sorted order ("inferred")
    kNone,      // no labels: every image file under the directory (None)
    kExplicit,  // `explicit_labels`, one per file in sorted path order (a list of ints)
  };
  enum class LabelMode {
    kInt,          // int32 class index: sparse categorical cross-entropy ("int")
    kCategorical,  // float32 one-hot [num_classes]: categorical cross-entropy ("categorical")
    kBinary,       // float32 [1], 0 or 1, exactly 2 classes: binary cross-entropy ("binary")
    kNone,         // images only (None)
  };
  enum class ColorMode { kGrayscale, kRgb };  // 1 or 3 channels. (JPEG has no alpha: no "rgba".)
  enum class Subset { kAll, kTraining, kValidation };

  Labels labels = Labels::kInferred;
  std::vector<int64_t> explicit_labels;  // Labels::kExplicit only
  LabelMode label_mode = LabelMode::kInt;
  // With Labels::kInferred: the subdirectories to use, in this order (their labels are their
  // positions here); empty: every subdirectory, sorted. A name with no subdirectory is an error.
  std::vector<std::string> class_names;
  ColorMode color_mode = ColorMode::kRgb;
  // Images a batch; nullopt: unbatched elements (batch_size=None).
  std::optional<int64_t> batch_size = 32;
  int64_t image_height = 256;
  int64_t image_width = 256;
  // Shuffle the files once (before the split) and again every epoch; false: sorted order.
  bool shuffle = true;
  // The shuffles' seed; unset: a random one (then validation_split needs a seed, as in Keras, so
  // that the training and validation subsets are disjoint).
  std::optional<uint64_t> seed;
  // The last int(validation_split * files) files (after the first shuffle) are the validation
  // subset, the rest the training subset. Set both or neither of validation_split and subset.
  double validation_split = 0;
  Subset subset = Subset::kAll;
  ResizeMethod interpolation = ResizeMethod::kBilinear;
  bool follow_links = false;
  // Resize the largest centred window of the output's aspect ratio instead of stretching the
  // whole image (see CropToAspectRatio).
  bool crop_to_aspect_ratio = false;
  // Print "Found N files belonging to K classes." and "Using M files for training." to stderr,
  // as Keras does.
  bool verbose = true;

  // Beyond Keras. A file that cannot be read or decoded (a PNG, a truncated JPEG) fails the
  // pipeline with its path; with skip_errors it is skipped, counted and passed to `on_skipped`
  // (called from pipeline threads).
  bool skip_errors = false;
  std::function<void(const absl::Status&)> on_skipped;
  // Decode each JPEG at 1/2, 1/4 or 1/8 scale in the DCT domain when that still covers the output
  // size (see DecodeAndResize): much faster for photos larger than the output, and smoother than
  // Keras' bilinear shrinking without antialiasing. false: decode at full size, as Keras does.
  bool dct_scaling = true;
  int num_parallel_calls = kAutotune;
};

// The files of a directory tree and their labels, as Keras' index_directory finds them: class
// subdirectories (not starting with '.') in sorted order, each walked recursively (into symlinked
// directories only with follow_links, and never twice into one directory), its files with the
// extensions .jpg, .jpeg, .png, .bmp or .gif (any case) sorted by directory and then name.
struct ImageDirectoryIndex {
  std::vector<std::string> files;
  std::vector<int64_t> labels;  // one per file; empty without labels
  std::vector<std::string> class_names;
};

// Indexes `directory` (no shuffle, no split). Errors: NotFound for a missing directory,
// InvalidArgument for a class name with no subdirectory, explicit labels that do not match the
// files, or a tree without image files.
absl::StatusOr<ImageDirectoryIndex> IndexImageDirectory(const std::string& directory,
                                                        const ImageDirectoryOptions& options);

// What ImageDatasetFromDirectory returns: the dataset and what Keras attaches to it.
struct ImageDirectoryDataset {
  // Elements {image float32 [B, H, W, C] with values in [0, 255], label} (label as label_mode
  // says; no label with LabelMode::kNone), [H, W, C] and a scalar label when unbatched.
  Dataset dataset;
  std::vector<std::string> class_names;
  // The subset's files after the one shuffle before the split (Keras' file_paths); each epoch
  // then reads them in a new order.
  std::vector<std::string> files;
};

// keras.utils.image_dataset_from_directory: index the tree, shuffle the files once with the seed,
// take the subset, then a pipeline of ops usable alone: FromTensorSlices(files, labels) ->
// [Shuffle(every file, reshuffled each epoch)] -> Map(ReadFile, DecodeAndResize to float32) ->
// [IgnoreErrors] -> [Batch] -> Prefetch.
//
// Differences from Keras, all to be faster or clearer: JPEG is the only format decoded (a PNG,
// BMP or GIF fails with its path, or is skipped with skip_errors); resized values are rounded to
// whole levels (Keras' are not: they differ by at most 0.5); with dct_scaling (the default) a
// large photo is shrunk in the DCT domain before the bilinear resize; the per-epoch shuffle is
// over every file, not a buffer of 8 batches.
absl::StatusOr<ImageDirectoryDataset> ImageDatasetFromDirectory(
    const std::string& directory, const ImageDirectoryOptions& options = {});

// Keras' subset="both": the training and the validation subsets of `options.validation_split`
// (set; `options.subset` left at kAll), from one walk of the tree. Prints "Found N files ...",
// then "Using M files for training." and "Using K files for validation." with verbose.
absl::StatusOr<std::pair<ImageDirectoryDataset, ImageDirectoryDataset>> ImageDatasetsFromDirectory(
    const std::string& directory, const ImageDirectoryOptions& options);

}  // namespace sluice::train::data

#endif  // SLUICE_TRAIN_DATA_IMAGE_DATASET_FROM_DIRECTORY_H_
