#include "train/layers/relu.h"

#include "train/ops/activations.h"

namespace sluice::train::layers {
absl::StatusOr<Tensor> ReLU::Forward(const Tensor& input, bool) { return ops::Relu(input); }

}  // namespace sluice::train::layers
