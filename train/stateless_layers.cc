#include "train/stateless_layers.h"

#include "train/activations.h"
#include "train/reshape.h"
#include "train/tape.h"

namespace sluice::train::layers {

absl::StatusOr<Tensor> ReLU::Forward(const Tensor& input) { return Relu(input); }

absl::StatusOr<Tensor> MaxPool::Forward(const Tensor& input) { return MaxPool2D(input, options_); }

absl::StatusOr<Tensor> Flatten::Forward(const Tensor& input) { return train::Flatten(input); }

absl::StatusOr<Tensor> Dropout::Forward(const Tensor& input) {
  if (!training()) return input;
  return train::Dropout(input, {.rate = rate_, .seed = seed_ + calls_++});
}

}  // namespace sluice::train::layers
