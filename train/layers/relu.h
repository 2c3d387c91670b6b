#ifndef SLUICE_TRAIN_LAYERS_RELU_H_
#define SLUICE_TRAIN_LAYERS_RELU_H_

#include <string>

#include "train/layers/module.h"

namespace sluice::train::layers {

// keras.layers.ReLU: max(x, 0).
class ReLU : public Module {
 public:
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return "relu"; }
  absl::StatusOr<LayerConfig> GetConfig() override { return LayerConfig{.class_name = "ReLU"}; }
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_RELU_H_
