#include "train/layers/flatten.h"

#include "train/ops/reshape.h"

namespace sluice::train::layers {
absl::StatusOr<Tensor> Flatten::Forward(const Tensor& input, bool) { return ops::Flatten(input); }

}  // namespace sluice::train::layers
