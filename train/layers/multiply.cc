#include "train/layers/multiply.h"

#include "core/status_macros.h"
#include "train/ops/arithmetic.h"

namespace sluice::train::layers {

absl::StatusOr<Tensor> Multiply::Merged(const std::vector<Tensor>& inputs) {
  Tensor y = inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(y, ops::Mul(y, inputs[i]));
  }
  return y;
}

}  // namespace sluice::train::layers
