#ifndef SLUICE_EXAMPLES_CONSUMER_SYNTHETIC_FOLDERS_H_
#define SLUICE_EXAMPLES_CONSUMER_SYNTHETIC_FOLDERS_H_

// What the image-folder examples (image_folders.cc, transfer_learning.cc) share: small synthetic
// trees of class folders of JPEGs, and Keras' image_dataset_from_directory split with its
// augmentation layers.

#include <sluice/sluice.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace examples {

using namespace sluice;                    // NOLINT: an example
namespace layers = sluice::train::layers;  // keras.layers
namespace fs = std::filesystem;

// A 48x48 RGB JPEG of pattern `kind` (0: horizontal stripes, 1: vertical, 2: checks, 3: coarse
// checks), shifted by `phase` pixels.
inline absl::StatusOr<std::string> PatternJpeg(int kind, int phase) {
  Tensor image(DType::kUint8, Shape{48, 48, 3});
  for (int y = 0; y < 48; ++y) {
    for (int x = 0; x < 48; ++x) {
      const int u = y + phase, v = x + phase;
      const bool on = kind == 0   ? (u / 4) % 2 == 0
                      : kind == 1 ? (v / 4) % 2 == 0
                      : kind == 2 ? ((u / 4) + (v / 4)) % 2 == 0
                                  : ((u / 12) + (v / 12)) % 2 == 0;
      for (int c = 0; c < 3; ++c) image.data<uint8_t>()[(y * 48 + x) * 3 + c] = on ? 220 : 30;
    }
  }
  return EncodeJpeg(image);
}

inline absl::Status WriteTree(const std::string& root,
                              const std::vector<std::pair<std::string, int>>& classes) {
  for (const auto& [name, kind] : classes) {
    fs::create_directories(root + "/" + name);
    for (int i = 0; i < 40; ++i) {
      SLUICE_ASSIGN_OR_RETURN(std::string jpeg, PatternJpeg(kind, i % 8));
      std::ofstream(root + "/" + name + "/" + std::to_string(i) + ".jpg", std::ios::binary) << jpeg;
    }
  }
  return absl::OkStatus();
}

struct Split {
  Dataset training, validation;
  int64_t classes;
  std::vector<std::string> class_names;
};

// image_dataset_from_directory(dir, validation_split=0.2, subset="training"/"validation",
// seed=123, image_size=(32, 32), batch_size=16), the training subset augmented, both rescaled.
inline absl::StatusOr<Split> Load(const std::string& dir) {
  train::data::ImageDirectoryOptions options;
  options.image_height = options.image_width = 32;
  options.batch_size = 16;
  options.validation_split = 0.2;
  options.seed = 123;
  options.subset = train::data::ImageDirectoryOptions::Subset::kTraining;
  SLUICE_ASSIGN_OR_RETURN(auto training, train::data::ImageDatasetFromDirectory(dir, options));
  options.subset = train::data::ImageDirectoryOptions::Subset::kValidation;
  SLUICE_ASSIGN_OR_RETURN(auto validation, train::data::ImageDatasetFromDirectory(dir, options));
  const RandomFlip flip(RandomFlip::Mode::kHorizontal);
  SLUICE_ASSIGN_OR_RETURN(const RandomRotation rotate, RandomRotation::Create(0.1));
  SLUICE_ASSIGN_OR_RETURN(const RandomZoom zoom, RandomZoom::Create(0.1));
  const Rescaling rescale(1.0f / 255);
  Dataset augmented = training.dataset.Map(
      [=](Element e, const ElementContext& c) -> absl::StatusOr<Element> {
        SLUICE_ASSIGN_OR_RETURN(e[0], flip.Apply(e[0], c.seed));
        SLUICE_ASSIGN_OR_RETURN(e[0], rotate.Apply(e[0], c.seed));
        SLUICE_ASSIGN_OR_RETURN(e[0], zoom.Apply(e[0], c.seed));
        SLUICE_ASSIGN_OR_RETURN(e[0], rescale.Apply(e[0]));
        return e;
      },
      {.num_parallel_calls = kAutotune});
  Dataset rescaled = validation.dataset.Map([rescale](Element e) -> absl::StatusOr<Element> {
    SLUICE_ASSIGN_OR_RETURN(e[0], rescale.Apply(e[0]));
    return e;
  });
  return Split{augmented.Prefetch(), rescaled, static_cast<int64_t>(training.class_names.size()),
               training.class_names};
}

}  // namespace examples

#endif  // SLUICE_EXAMPLES_CONSUMER_SYNTHETIC_FOLDERS_H_
