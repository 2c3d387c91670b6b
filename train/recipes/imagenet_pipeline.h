#ifndef SLUICE_TRAIN_RECIPES_IMAGENET_PIPELINE_H_
#define SLUICE_TRAIN_RECIPES_IMAGENET_PIPELINE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "dataset/dataset.h"
#include "dataset/options.h"

namespace sluice::train::recipes {

// The ImageNet-style training input pipeline that `sluice bench` measures.
struct ImageNetPipelineOptions {
  // TFRecord files of image/encoded (JPEG) and image/class/label, e.g. "DIR/train-*.tfrecord".
  std::string files;
  // Instead of `files`: a folder of class folders of JPEGs (ImageDatasetFromDirectory's layout),
  // read file by file with ReadFile.
  std::string images_dir;
  // The Maps' num_parallel_calls.
  int parallelism = kAutotune;
  int64_t batch_size = 64;
  // The crops' height and width.
  int64_t image_size = 224;
  // Cache the encoded records (not decoded images) in memory after the first epoch.
  bool cache = false;
  // Non-empty: decode whole images, Snapshot them into this folder, and crop after it, so that
  // later epochs (and runs) read decoded images instead of decoding again. Neither with `cache`
  // nor with `decode_only` nor with `shuffle`.
  std::string snapshot;
  // Decode whole images only: no crop, no resize, no batch (the pipeline's ceiling).
  bool decode_only = false;
  // > 0: Shuffle(shuffle) right after the decode (whole decoded images with decode_only, the
  // cropped float images otherwise): the buffer that iterator checkpoints must not save whole.
  int64_t shuffle = 0;
  // Options::checkpoint_sources: false saves buffered elements whole in checkpoints.
  bool checkpoint_sources = true;
  // Passes over the data; 0: repeated without end.
  int64_t epochs = 0;
  uint64_t seed = 0;
  // When set, counts the bytes of the serialized records (or files) that reach the decode.
  std::shared_ptr<std::atomic<int64_t>> record_bytes;
};

// ListFiles -> Interleave(TFRecord) -> Map(parse) [-> Cache] -> Repeat -> Map(decode + random
// resized crop + flip + normalize) [-> Shuffle] -> Batch -> Prefetch; with `decode_only`, a
// whole-image decode and no batching. With `snapshot`: ... -> Map(parse) -> Map(decode) -> Snapshot
// -> Repeat -> Map(random resized crop + flip + normalize) -> Batch -> Prefetch. With `images_dir`,
// FromTensorSlices(files, labels) -> Map(ReadFile) replaces the first three stages. Batches are
// {images float32 [B, size, size, 3] normalized with ImageNet's mean and deviation, labels}.
absl::StatusOr<Dataset> ImageNetPipeline(const ImageNetPipelineOptions& options);

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_IMAGENET_PIPELINE_H_
