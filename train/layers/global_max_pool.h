#ifndef SLUICE_TRAIN_LAYERS_GLOBAL_MAX_POOL_H_
#define SLUICE_TRAIN_LAYERS_GLOBAL_MAX_POOL_H_

#include <string>

#include "train/layers/module.h"

namespace sluice::train::layers {

struct GlobalMaxPoolOptions {
  // Keep H and W as 1s: [N, 1, 1, C] instead of [N, C] (Keras' keepdims).
  bool keepdims = false;
};

// Keras GlobalMaxPooling2D: NHWC [N, H, W, C] to [N, C], the maximum over H and W (the Max op
// over axes {1, 2}, whose gradient goes to the maximum, split evenly between ties).
class GlobalMaxPool : public Module {
 public:
  GlobalMaxPool() = default;
  explicit GlobalMaxPool(GlobalMaxPoolOptions options) : options_(options) {}
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return "global_max_pool"; }
  absl::StatusOr<LayerConfig> GetConfig() override {
    return LayerConfig{.class_name = "GlobalMaxPool", .ints = {{"keepdims", options_.keepdims}}};
  }
  bool keepdims() const { return options_.keepdims; }

 private:
  GlobalMaxPoolOptions options_;
};

// Keras' names.
using GlobalMaxPooling2D = GlobalMaxPool;
using GlobalMaxPool2D = GlobalMaxPool;

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_GLOBAL_MAX_POOL_H_
