#ifndef SLUICE_TRAIN_LAYERS_MAX_POOL_H_
#define SLUICE_TRAIN_LAYERS_MAX_POOL_H_

#include <string>

#include "train/layers/module.h"
#include "train/ops/pool.h"

namespace sluice::train::layers {

// keras.layers.MaxPooling2D over NHWC input.
class MaxPool : public Module {
 public:
  explicit MaxPool(ops::Pool2DOptions options = {}) : options_(options) {}
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return "max_pool"; }
  absl::StatusOr<LayerConfig> GetConfig() override;
  const ops::Pool2DOptions& options() const { return options_; }

 private:
  ops::Pool2DOptions options_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_MAX_POOL_H_
