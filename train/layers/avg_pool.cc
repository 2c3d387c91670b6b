#include "train/layers/avg_pool.h"

namespace sluice::train::layers {
absl::StatusOr<Tensor> AvgPool::Forward(const Tensor& input, bool) {
  return ops::AvgPool2D(input, options_);
}

absl::StatusOr<LayerConfig> AvgPool::GetConfig() { return PoolConfig("AvgPool", options_); }

}  // namespace sluice::train::layers
