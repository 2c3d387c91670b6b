#ifndef SLUICE_TRAIN_RECIPES_IMAGE_MODEL_H_
#define SLUICE_TRAIN_RECIPES_IMAGE_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
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
  // Instead of `name`: a pretrained base from an ONNX file (importing::ImportOnnx, at the data's
  // height and width), cut at the output of its last global average pooling (Keras'
  // include_top=false), with the head of Keras' transfer-learning guide on it: Dense(256, relu),
  // Dropout(0.5), Dense(classes).
  std::string base_onnx;
};

struct ImageModel {
  std::unique_ptr<layers::Module> module;
  // [1, height, width, channels]: what SaveModel and layers::Summary take.
  Shape input_shape;
  // With base_onnx: the imported base up to its cut, whose layers `module` shares (freezing it
  // freezes them in `module`).
  std::shared_ptr<layers::Module> base;
};

// How MakeImageModel's error for an empty test set starts (the source follows): a base ONNX file
// that is missing is NotFound too.
inline constexpr absl::string_view kNoTestRecords = "no test records in ";

// The zoo's model `options.name` (or the base of `options.base_onnx` with a head), built for
// `data`: its images' height, width and channels from the first test batch, and data.classes
// outputs. NotFound when the test set is empty (kNoTestRecords); InvalidArgument for a base that
// takes other channels than the images have, or that has no global average pooling to cut at.
absl::StatusOr<ImageModel> MakeImageModel(const ImageModelOptions& options,
                                          const LabeledImages& data);

}  // namespace sluice::train::recipes

#endif  // SLUICE_TRAIN_RECIPES_IMAGE_MODEL_H_
