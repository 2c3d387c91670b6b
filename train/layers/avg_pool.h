#ifndef SLUICE_TRAIN_LAYERS_AVG_POOL_H_
#define SLUICE_TRAIN_LAYERS_AVG_POOL_H_

#include <optional>
#include <string>

#include "train/layers/module.h"
#include "train/layers/window_size.h"
#include "train/ops/pool.h"

namespace sluice::train::layers {

// Keras AveragePooling2D: padded positions do not count (see train/ops/pool.h).
class AvgPool : public Module {
 public:
  explicit AvgPool(ops::Pool2DOptions options = {}) : options_(options) {}
  // Keras' AveragePooling2D(pool_size, strides = pool_size, padding = "valid"): AvgPool2D(2),
  // AvgPool2D({3, 3}, 2, ops::Padding::kSame).
  explicit AvgPool(PoolSize pool_size, std::optional<PoolSize> strides = std::nullopt,
                   ops::Padding padding = ops::Padding::kValid)
      : options_(PoolOptions(pool_size, strides, padding)) {}
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return "avg_pool"; }
  absl::StatusOr<LayerConfig> GetConfig() override;
  const ops::Pool2DOptions& options() const { return options_; }

 private:
  ops::Pool2DOptions options_;
};

// Keras' and the op's names for the layer.
using AvgPool2D = AvgPool;
using AveragePooling2D = AvgPool;

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_AVG_POOL_H_
