#include "train/layers/concatenate.h"

#include "train/ops/concat.h"

namespace sluice::train::layers {

absl::StatusOr<Tensor> Concatenate::Merged(const std::vector<Tensor>& inputs) {
  return ops::Concat(inputs, axis_);
}

}  // namespace sluice::train::layers
