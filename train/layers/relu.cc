#include "train/layers/relu.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/ops/activations.h"
#include "train/ops/arithmetic.h"
#include "train/ops/scalar.h"

namespace sluice::train::layers {

absl::StatusOr<Tensor> ReLU::Forward(const Tensor& input, bool) {
  const ReLUOptions& o = options_;
  if ((o.max_value && !(*o.max_value >= 0)) || !(o.negative_slope >= 0) || !(o.threshold >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReLU: max_value (", o.max_value ? absl::StrCat(*o.max_value) : "unset",
                     "), negative_slope (", o.negative_slope, ") and threshold (", o.threshold,
                     ") must be >= 0"));
  }
  // Keras' relu (keras/src/activations/activations.py): the positive part, clipped, minus the
  // negative part's slope.
  Tensor y;
  if (o.threshold != 0) {
    // x where x > threshold, else 0: x times a mask that has no gradient.
    SLUICE_ASSIGN_OR_RETURN(const Tensor threshold, ops::ScalarLike(o.threshold, input));
    SLUICE_ASSIGN_OR_RETURN(const Tensor above, ops::Greater(input, threshold));
    SLUICE_ASSIGN_OR_RETURN(y, ops::Mul(input, above));
  } else {
    SLUICE_ASSIGN_OR_RETURN(y, ops::Relu(input));
  }
  if (o.max_value) {
    SLUICE_ASSIGN_OR_RETURN(const Tensor max_value, ops::ScalarLike(*o.max_value, input));
    SLUICE_ASSIGN_OR_RETURN(y, ops::Minimum(y, max_value));
  }
  if (o.negative_slope != 0) {
    // negative_slope * relu(threshold - x).
    SLUICE_ASSIGN_OR_RETURN(const Tensor negated, ops::Scale(input, -1));
    SLUICE_ASSIGN_OR_RETURN(const Tensor shifted, ops::AddScalar(negated, o.threshold));
    SLUICE_ASSIGN_OR_RETURN(const Tensor below, ops::Relu(shifted));
    SLUICE_ASSIGN_OR_RETURN(const Tensor scaled, ops::Scale(below, o.negative_slope));
    SLUICE_ASSIGN_OR_RETURN(y, ops::Sub(y, scaled));
  }
  return y;
}

absl::StatusOr<LayerConfig> ReLU::GetConfig() {
  LayerConfig config{.class_name = "ReLU"};
  // Only what differs from the defaults: a plain ReLU's config stays what it always was.
  if (options_.max_value) config.floats["max_value"] = *options_.max_value;
  if (options_.negative_slope != 0) config.floats["negative_slope"] = options_.negative_slope;
  if (options_.threshold != 0) config.floats["threshold"] = options_.threshold;
  return config;
}

}  // namespace sluice::train::layers
