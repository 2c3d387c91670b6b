#ifndef SLUICE_TRAIN_DATA_IMAGE_DATASET_H_
#define SLUICE_TRAIN_DATA_IMAGE_DATASET_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "dataset/dataset.h"
#include "dataset/options.h"

namespace sluice::train::data {

// Labeled images in TFRecords as `sluice convert` writes them (and TensorFlow's ImageNet build
// script): image/encoded (JPEG, or raw uint8 pixels when image/format is "raw"),
// image/class/label, image/height, image/width, image/format.
struct ImageDatasetOptions {
  // A glob of TFRecord files, e.g. "DIR/train-*.tfrecord".
  std::string files;
  int64_t batch_size = 64;
  // 1 (grayscale) or 3 (RGB); images are decoded to this many channels.
  int channels = 1;
  // Shuffle records with this buffer before decoding; 0: keep the files' order.
  int64_t shuffle_buffer = 0;
  // Random left-right flip and a random crop after zero-padding by `pad_crop` pixels per side
  // (the CIFAR/ResNet augmentation); for training sets only.
  bool augment = false;
  int64_t pad_crop = 4;
  // The images' size, when the data set has one: an image of another size then fails (or with
  // skip_errors is skipped) naming its file and record, with `size_hint` after the sizes, instead
  // of failing its batch with mismatched shapes. 0: any size (the batch then needs them equal).
  int64_t height = 0;
  int64_t width = 0;
  std::string size_hint;
  // Only the first `limit` records (-1: all): the CI's quick subset.
  int64_t limit = -1;
  // Drop a last partial batch (keeps batch statistics comparable).
  bool drop_remainder = false;
  // Skip (and count) records that fail to read, parse or decode instead of stopping;
  // `on_skipped` (thread-safe) sees each skipped record's error, which names the file and
  // record.
  bool skip_errors = false;
  std::function<void(const absl::Status&)> on_skipped;
  int num_parallel_calls = kAutotune;
  uint64_t seed = 0;
};

// Records -> [shuffle] -> parse + decode to float32 [H, W, C] in [0, 1] (x / 255) [+ augment] ->
// Batch -> Prefetch. Elements are {images float32 [B, H, W, C], labels int64 [B]}. A record
// whose bytes do not match its declared size or format fails with the record's file and index.
absl::StatusOr<Dataset> MakeImageDataset(const ImageDatasetOptions& options);

}  // namespace sluice::train::data

#endif  // SLUICE_TRAIN_DATA_IMAGE_DATASET_H_
