#include "train/optimizers/dynamic_loss_scale.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/transfer.h"
#include "train/optimizers/scaled_copy.h"
#include "train/optimizers/sum_of_squares.h"

namespace sluice::train::optimizers {

absl::StatusOr<DynamicLossScale> DynamicLossScale::Create(DynamicLossScaleOptions options) {
  int exponent = 0;
  const bool power_of_two = std::frexp(options.initial_scale, &exponent) == 0.5f;
  if (!(options.initial_scale >= 1) || !std::isfinite(options.initial_scale) || !power_of_two) {
    return absl::InvalidArgumentError(absl::StrCat(
        "loss scale: initial_scale must be a power of two >= 1, got ", options.initial_scale));
  }
  if (options.growth_steps < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("loss scale: growth_steps must be >= 1, got ", options.growth_steps));
  }
  return DynamicLossScale(options);
}

absl::Status DynamicLossScale::Restore(const State& state) {
  int exponent = 0;
  if (!(state.scale >= 1) || !std::isfinite(state.scale) ||
      std::frexp(state.scale, &exponent) != 0.5f) {
    return absl::DataLossError(
        absl::StrCat("loss scale: a saved scale must be a power of two >= 1, got ", state.scale));
  }
  if (state.finite_steps < 0 || state.finite_steps >= options_.growth_steps) {
    return absl::DataLossError(absl::StrCat("loss scale: saved finite steps ", state.finite_steps,
                                            " outside [0, growth_steps ", options_.growth_steps,
                                            ")"));
  }
  if (state.skipped_steps < 0) {
    return absl::DataLossError(
        absl::StrCat("loss scale: saved skipped steps ", state.skipped_steps, " < 0"));
  }
  scale_ = state.scale;
  finite_steps_ = state.finite_steps;
  skipped_steps_ = state.skipped_steps;
  return absl::OkStatus();
}

absl::StatusOr<bool> DynamicLossScale::UnscaleAndUpdate(std::vector<std::optional<Tensor>>& grads) {
  const float inverse = 1.0f / scale_;  // exact: scale_ is a power of two
  for (std::optional<Tensor>& g : grads) {
    if (!g) continue;
    SLUICE_ASSIGN_OR_RETURN(g, ScaledCopy(*g, inverse, "loss scale"));
  }
  SLUICE_ASSIGN_OR_RETURN(std::optional<Tensor> sum, SumOfSquares(grads, "loss scale"));
  bool finite = true;
  if (sum) {
    SLUICE_ASSIGN_OR_RETURN(float value, backend::ReadScalar(*sum));
    // A square past float32's range overflows too: such a gradient is no use either.
    finite = std::isfinite(value);
  }
  if (finite) {
    if (++finite_steps_ >= options_.growth_steps) {
      const float grown = scale_ * 2;
      if (std::isfinite(grown)) scale_ = grown;
      finite_steps_ = 0;
    }
  } else {
    scale_ = scale_ > 1 ? scale_ / 2 : 1.0f;
    finite_steps_ = 0;
    ++skipped_steps_;
  }
  return finite;
}

}  // namespace sluice::train::optimizers
