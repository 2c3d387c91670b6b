#ifndef SLUICE_TOOLS_IMAGE_PIPELINE_H_
#define SLUICE_TOOLS_IMAGE_PIPELINE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/device.h"
#include "dataset/dataset.h"
#include "dataset/options.h"

namespace sluice::tools {

// The ImageNet-style input pipeline `sluice bench` measures.
struct BenchConfig {
  std::string files;
  // Instead of `files`: a directory of class folders of JPEGs (ImageDatasetFromDirectory's
  // layout), read file by file with ReadFile.
  std::string images_dir;
  int parallelism = kAutotune;
  int64_t batch = 64;
  int64_t image_size = 224;
  bool cache = false;
  // Non-empty: decode whole images, Snapshot them into this directory, and augment after it,
  // so that later epochs (and runs) read decoded images instead of decoding again.
  std::string snapshot;
  bool decode_only = false;
  // > 0: Shuffle(shuffle) right after the decode (whole decoded images with decode_only, the
  // cropped float images otherwise): the buffer that iterator checkpoints must not save whole.
  int64_t shuffle = 0;
  // Options::checkpoint_sources: false saves buffered elements whole in checkpoints.
  bool checkpoint_sources = true;
  double seconds = 10;
  int64_t epochs = 0;  // 0: run for `seconds` over a repeated dataset.
  uint64_t seed = 0;
  // Not the host: the pipeline ends with PrefetchToDevice to this device.
  Device device = Device::Cpu();
};

// ListFiles -> Interleave(TFRecord) -> Map(parse) [-> Cache] -> Repeat -> Map(decode + random
// resized crop + flip + normalize) [-> Shuffle] -> Batch -> Prefetch; with `decode_only`, a
// whole-image decode and no batching. With `snapshot`: ... -> Map(parse) -> Map(decode) -> Snapshot
// -> Repeat -> Map(random resized crop + flip + normalize) -> Batch -> Prefetch. With `images_dir`,
// FromTensorSlices(files, labels) -> Map(ReadFile) replaces the first three stages. `record_bytes`
// counts the serialized records that reach the decode stage.
absl::StatusOr<Dataset> BuildPipeline(const BenchConfig& config,
                                      std::shared_ptr<std::atomic<int64_t>> record_bytes);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_IMAGE_PIPELINE_H_
