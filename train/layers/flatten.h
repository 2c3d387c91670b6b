#ifndef SLUICE_TRAIN_LAYERS_FLATTEN_H_
#define SLUICE_TRAIN_LAYERS_FLATTEN_H_

#include <string>

#include "train/layers/module.h"

namespace sluice::train::layers {

// keras.layers.Flatten: [N, ...] to [N, product of the rest].
class Flatten : public Module {
 public:
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return "flatten"; }
  absl::StatusOr<LayerConfig> GetConfig() override { return LayerConfig{.class_name = "Flatten"}; }
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_FLATTEN_H_
