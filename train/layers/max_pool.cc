#include "train/layers/max_pool.h"

namespace sluice::train::layers {
absl::StatusOr<Tensor> MaxPool::Forward(const Tensor& input, bool) {
  return ops::MaxPool2D(input, options_);
}

}  // namespace sluice::train::layers
