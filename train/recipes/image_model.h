#ifndef SLUICE_TRAIN_RECIPES_IMAGE_MODEL_H_
#define SLUICE_TRAIN_RECIPES_IMAGE_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/shape.h"
#include "train/layers/module.h"
#include "train/recipes/labeled_images.h"

namespace sluice::train::recipes {

struct ImageModelOptions {
  // A model of the zoo (models::ModelNames(): "mlp", "cnn", "resnet-small", "resnet-20").
  std::string name = "cnn";
  // The resnets only: recompute each residual block's activations in the backward pass
  // (models::ModelOptions::recompute).
  bool recompute = false;
  // The initializers' and dropout's seed.
  uint64_t seed = 0;
};

struct ImageModel {
  std::unique_ptr<layers::Module> module;
  // [1, height, width, channels]: what SaveModel and layers::Summary take.
  Shape input_shape;
};

// The zoo's model `options.name`, built for `data`: its images' height, width and channels from
// the first test batch, and data.classes outputs. NotFound when the test set is empty.
absl::StatusOr<ImageModel> MakeImageModel(const ImageModelOptions& options,
                                          const LabeledImages& data);

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_IMAGE_MODEL_H_
