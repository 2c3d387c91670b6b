#include "train/layers/merge.h"

#include "absl/strings/str_cat.h"

namespace sluice::train::layers {

absl::StatusOr<Tensor> Merge::Forward(const Tensor& input, bool training) {
  return ForwardInputs({input}, training);
}

absl::StatusOr<Tensor> Merge::ForwardInputs(const std::vector<Tensor>& inputs, bool training) {
  // Keras 2's rule: merging one tensor is almost always a wiring mistake.
  if (inputs.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": takes 2 or more inputs, got ", inputs.size()));
  }
  return Merged(inputs);
}

}  // namespace sluice::train::layers
