#ifndef SLUICE_TRAIN_RECIPES_AUGMENTATION_H_
#define SLUICE_TRAIN_RECIPES_AUGMENTATION_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dataset/dataset.h"

namespace sluice::train::recipes {

// What the training images go through before the model sees them.
enum class Augmentation {
  kNone,
  // A random left-right flip and a random crop after 4 pixels of zero padding (the CIFAR/ResNet
  // augmentation), fused into the decode of TFRecord images (data::ImageDatasetOptions::augment).
  kPadCrop,
  // Keras' RandomFlip("horizontal"), RandomTranslation(0.1, 0.1) and RandomZoom(0.1), on each
  // batch (KerasAugmentation).
  kKeras,
};

// "none", "pad-crop" or "keras": the names `sluice train --augmentation` and its --json use.
std::string AugmentationName(Augmentation augmentation);

// The augmentation AugmentationName calls `name`; InvalidArgument for any other name.
absl::StatusOr<Augmentation> AugmentationFromName(absl::string_view name);

struct KerasAugmentationOptions {
  // false: no augmentation, only the rescaling (an evaluation set's or an unaugmented run's).
  bool augment = true;
  // Each image is multiplied by this after the augmentation (Keras' Rescaling(scale)); 1: not.
  float rescale = 1;
};

// Maps each batch {images float32 [B, H, W, C], labels} of `batches` through Keras'
// RandomFlip("horizontal"), RandomTranslation(0.1, 0.1) and RandomZoom(0.1), drawn from the
// element's seed (so seeded pipelines repeat), then Rescaling(rescale); in parallel (AUTOTUNE),
// then Prefetch.
absl::StatusOr<Dataset> KerasAugmentation(Dataset batches, KerasAugmentationOptions options = {});

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_AUGMENTATION_H_
