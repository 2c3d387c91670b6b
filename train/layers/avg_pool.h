#ifndef SLUICE_TRAIN_LAYERS_AVG_POOL_H_
#define SLUICE_TRAIN_LAYERS_AVG_POOL_H_

#include <string>

#include "train/layers/module.h"
#include "train/ops/pool.h"

namespace sluice::train::layers {

// Keras AveragePooling2D: padded positions do not count (see train/ops/pool.h).
class AvgPool : public Module {
 public:
  explicit AvgPool(ops::Pool2DOptions options = {}) : options_(options) {}
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return "avg_pool"; }
  absl::StatusOr<LayerConfig> GetConfig() override;
  const ops::Pool2DOptions& options() const { return options_; }

 private:
  ops::Pool2DOptions options_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_AVG_POOL_H_
