#ifndef SLUICE_TRAIN_LAYERS_GLOBAL_AVG_POOL_H_
#define SLUICE_TRAIN_LAYERS_GLOBAL_AVG_POOL_H_

#include <string>

#include "train/layers/module.h"

namespace sluice::train::layers {

// Keras GlobalAveragePooling2D: NHWC [N, H, W, C] to [N, C], the mean over H
// and W (the Mean op over axes {1, 2}, which carries the gradient).
class GlobalAvgPool : public Module {
 public:
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return "global_avg_pool"; }
  absl::StatusOr<LayerConfig> GetConfig() override {
    return LayerConfig{.class_name = "GlobalAvgPool"};
  }
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_GLOBAL_AVG_POOL_H_
