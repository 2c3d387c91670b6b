#ifndef SLUICE_TRAIN_MODELS_MODEL_ZOO_H_
#define SLUICE_TRAIN_MODELS_MODEL_ZOO_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "train/layers/module.h"

namespace sluice::train::models {

// The input and output of an image classifier.
struct ModelShape {
  int64_t height = 28;
  int64_t width = 28;
  int64_t channels = 1;
  int64_t classes = 10;
};

// How MakeModel builds a model beyond its architecture.
struct ModelOptions {
  // Wraps every residual block of "resnet-small" and "resnet-20" in layers::Recompute
  // (`sluice train --recompute`): its activations are recomputed in the backward pass instead of
  // kept, for less memory at the cost of a second forward pass of each block. The gradients, and
  // so the training, are the same. InvalidArgument for a model without residual blocks.
  bool recompute = false;
};

// The models `sluice train` knows, built with `seed` for their initializers and dropout:
//  - "mlp": Flatten, Dense 256, 128, 100 (ReLU each), Dense classes.
//  - "cnn": the model of TensorFlow's layers tutorial: Conv 5x5x32 same + ReLU, MaxPool 2,
//    Conv 5x5x64 same + ReLU, MaxPool 2, Flatten, Dense 1024 + ReLU, Dropout 0.4, Dense classes.
//  - "resnet-small": Conv 3x3x32 + BatchNorm + ReLU, then ResNet v1 basic blocks 32, 64 (stride 2)
//    and 128 (stride 2), GlobalAvgPool, Dense classes (with flip and pad-crop augmentation, which
//    `sluice train` turns on for it). 0.31 M parameters.
//  - "resnet-20": He et al. 2016's CIFAR ResNet-20: Conv 3x3x16 + BatchNorm + ReLU, three stages
//    of three basic blocks of 16, 32 (stride 2) and 64 (stride 2) channels, GlobalAvgPool, Dense
//    classes; projection shortcuts where the shape changes. 0.27 M parameters, 19 convolutions:
//    about as many multiply-adds as resnet-small, and deeper.
// Unknown names are InvalidArgument listing the known ones.
absl::StatusOr<std::unique_ptr<layers::Module>> MakeModel(absl::string_view name,
                                                          const ModelShape& shape,
                                                          uint64_t seed = 0,
                                                          const ModelOptions& options = {});

// The names MakeModel accepts.
std::vector<std::string> ModelNames();

// The names of the models built of residual blocks, in ModelNames' order.
std::vector<std::string> ResNetNames();

// Whether the model `name` is built of residual blocks (resnet-small, resnet-20): those
// `sluice train` augments by default and ModelOptions::recompute applies to.
bool IsResNet(absl::string_view name);

}  // namespace sluice::train::models

#endif  // SLUICE_TRAIN_MODELS_MODEL_ZOO_H_
