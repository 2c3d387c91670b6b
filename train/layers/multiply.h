#ifndef SLUICE_TRAIN_LAYERS_MULTIPLY_H_
#define SLUICE_TRAIN_LAYERS_MULTIPLY_H_

#include <string>
#include <vector>

#include "train/layers/merge.h"

namespace sluice::train::layers {

// x_1 * x_2 * ... element-wise (NumPy broadcasting), as keras.layers.Multiply: a skip connection's
// join in a functional model (model.h).
class Multiply : public Merge {
 public:
  std::string name() const override { return "multiply"; }
  absl::StatusOr<LayerConfig> GetConfig() override { return LayerConfig{.class_name = "Multiply"}; }

 protected:
  absl::StatusOr<Tensor> Merged(const std::vector<Tensor>& inputs) override;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_MULTIPLY_H_
