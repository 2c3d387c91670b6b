#include "train/layers/max_pool.h"

namespace sluice::train::layers {
absl::StatusOr<Tensor> MaxPool::Forward(const Tensor& input, bool) {
  return ops::MaxPool2D(input, options_);
}

absl::StatusOr<LayerConfig> MaxPool::GetConfig() { return PoolConfig("MaxPool", options_); }

}  // namespace sluice::train::layers
