#ifndef SLUICE_TRAIN_LAYERS_MAX_POOL_H_
#define SLUICE_TRAIN_LAYERS_MAX_POOL_H_

#include <optional>
#include <string>

#include "train/layers/module.h"
#include "train/layers/window_size.h"
#include "train/ops/pool.h"

namespace sluice::train::layers {

// keras.layers.MaxPooling2D over NHWC input.
class MaxPool : public Module {
 public:
  explicit MaxPool(ops::Pool2DOptions options = {}) : options_(options) {}
  // Keras' MaxPooling2D(pool_size, strides = pool_size, padding = "valid"): MaxPool2D(2),
  // MaxPool2D({3, 3}, 2, ops::Padding::kSame).
  explicit MaxPool(PoolSize pool_size, std::optional<PoolSize> strides = std::nullopt,
                   ops::Padding padding = ops::Padding::kValid)
      : options_(PoolOptions(pool_size, strides, padding)) {}
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return "max_pool"; }
  absl::StatusOr<LayerConfig> GetConfig() override;
  const ops::Pool2DOptions& options() const { return options_; }

 private:
  ops::Pool2DOptions options_;
};

// Keras' and the op's names for the layer.
using MaxPool2D = MaxPool;
using MaxPooling2D = MaxPool;

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_MAX_POOL_H_
