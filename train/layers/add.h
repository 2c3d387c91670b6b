#ifndef SLUICE_TRAIN_LAYERS_ADD_H_
#define SLUICE_TRAIN_LAYERS_ADD_H_

#include <string>
#include <vector>

#include "train/layers/merge.h"

namespace sluice::train::layers {

// x_1 + x_2 + ... (NumPy broadcasting), as keras.layers.Add: a skip connection's join
// in a functional model (model.h).
class Add : public Merge {
 public:
  std::string name() const override { return "add"; }
  absl::StatusOr<LayerConfig> GetConfig() override { return LayerConfig{.class_name = "Add"}; }

 protected:
  absl::StatusOr<Tensor> Merged(const std::vector<Tensor>& inputs) override;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_ADD_H_
