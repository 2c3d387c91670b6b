#ifndef SLUICE_TRAIN_LAYERS_CONCATENATE_H_
#define SLUICE_TRAIN_LAYERS_CONCATENATE_H_

#include <string>
#include <vector>

#include "train/layers/merge.h"

namespace sluice::train::layers {

// keras.layers.Concatenate(axis): joins its inputs along `axis` (negative counts from the end,
// -1: the channels), every other dimension equal.
class Concatenate : public Merge {
 public:
  explicit Concatenate(int axis = -1) : axis_(axis) {}
  std::string name() const override { return "concatenate"; }
  absl::StatusOr<LayerConfig> GetConfig() override {
    return LayerConfig{.class_name = "Concatenate", .ints = {{"axis", axis_}}};
  }
  int axis() const { return axis_; }

 protected:
  absl::StatusOr<Tensor> Merged(const std::vector<Tensor>& inputs) override;

 private:
  int axis_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_CONCATENATE_H_
