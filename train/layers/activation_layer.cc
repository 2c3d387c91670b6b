#include "train/layers/activation_layer.h"

#include <string>

namespace sluice::train::layers {

absl::StatusOr<Tensor> ActivationLayer::Forward(const Tensor& input, bool) {
  return Activate(activation_, input);
}

absl::StatusOr<LayerConfig> ActivationLayer::GetConfig() {
  return LayerConfig{.class_name = "Activation",
                     .strings = {{"activation", std::string(ActivationName(activation_))}}};
}

}  // namespace sluice::train::layers
